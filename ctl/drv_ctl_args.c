/*  drv_ctl_args — droverctl's global options wherever they are typed (before
    or after the command, as kubectl takes them), a suggestion for a mistyped
    command, and the bash completion script. */
#include "drv_ctl_args.h"

#include "drover/drv_suggest.h"
#include "drover/drv_yaml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Global options: short, long, whether they take a value.
static const struct {
    char short_name;
    const char *long_name;
    bool value;
} s_globals[] = {
    {'e', "endpoint", true}, {'o', "output", true}, {'t', "timeout", true}, {0, "key", true},
    {0, "server-key", true}, {'w', "watch", false}, {'h', "help", false},   {0, "token", true},
    {0, "token-file", true}, {'c', "config", true},
};
#define GLOBALS (sizeof s_globals / sizeof s_globals[0])

//  Applies one global option; returns -1 (with a message) when its value is wrong.
static int s_apply(drv_ctl_t *ctl, char name, const char *value, bool *help)
{
    switch (name) {
    case 'e':
        if (ctl->endpoint_count == DRV_CTL_MAX_ENDPOINTS) {
            fprintf(stderr, "droverctl: at most %d -e endpoints\n", DRV_CTL_MAX_ENDPOINTS);
            return -1;
        }
        ctl->endpoints[ctl->endpoint_count++] = value;
        ctl->options.endpoint = ctl->endpoints[0];
        return 0;
    case 'o':
        if (strcmp(value, "json") && strcmp(value, "table") && strcmp(value, "yaml")) {
            fprintf(stderr, "droverctl: -o takes table, json or yaml, not \"%s\" (try: -o json)\n", value);
            return -1;
        }
        ctl->json = strcmp(value, "table") != 0; // yaml: the same document, printed as YAML
        ctl->yaml = !strcmp(value, "yaml");
        return 0;
    case 'T':
        fprintf(stderr, "droverctl: --token shows the token to every user of this machine (the process list); "
                        "prefer DROVER_TOKEN or --token-file\n");
        ctl->options.token = value;
        return 0;
    case 'F': {
        static char token[1024]; // the token from a file: one per run, for the run
        FILE *file = fopen(value, "r");
        bool read = file && fgets(token, sizeof token, file);
        if (file) {
            fclose(file);
        }
        token[strcspn(token, "\r\n")] = 0;
        if (!read || !token[0]) {
            fprintf(stderr, "droverctl: --token-file: cannot read a token from %s\n", value);
            return -1;
        }
        ctl->options.token = token;
        return 0;
    }
    case 't': {
        char *end;
        long secs = strtol(value, &end, 10);
        if (*end || secs < 1 || secs > 86400) {
            fprintf(stderr, "droverctl: -t takes whole seconds from 1 to 86400, not \"%s\" (try: -t 30)\n", value);
            return -1;
        }
        ctl->options.timeout_ms = (int)secs * 1000;
        return 0;
    }
    case 'k':
        ctl->options.client_key = value;
        return 0;
    case 's':
        ctl->options.server_key = value;
        return 0;
    case 'w':
        ctl->watch = true;
        return 0;
    case 'c':
        ctl->config = value;
        return 0;
    case 'h':
        *help = true;
        return 0;
    }
    return 0;
}

//  Which global argv[i] is (its index in s_globals), or -1; *inline_value is
//  the value given as --name=value or -ovalue.
static int s_match(const char *arg, const char **inline_value)
{
    *inline_value = NULL;
    for (size_t g = 0; g < GLOBALS; g++) {
        size_t len = strlen(s_globals[g].long_name);
        if (!strncmp(arg, "--", 2) && !strncmp(arg + 2, s_globals[g].long_name, len) &&
            (arg[2 + len] == 0 || (arg[2 + len] == '=' && s_globals[g].value))) {
            *inline_value = arg[2 + len] == '=' ? arg + 3 + len : NULL;
            return (int)g;
        }
        if (s_globals[g].short_name && arg[0] == '-' && arg[1] == s_globals[g].short_name &&
            (arg[2] == 0 || s_globals[g].value)) {
            *inline_value = arg[2] ? arg + 2 : NULL;
            return (int)g;
        }
    }
    return -1;
}

int drv_ctl_args_take(drv_ctl_t *ctl, int argc, char **argv, bool *help_before_command)
{
    int kept = 1;
    bool command_seen = false, verbatim = false;
    *help_before_command = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = NULL;
        int g = verbatim || arg[0] != '-' ? -1 : s_match(arg, &value);
        if (!verbatim && !strcmp(arg, "--")) {
            verbatim = true;
            continue;
        }
        //  After the command, -h belongs to it (droverctl apply --help).
        if (g < 0 || (s_globals[g].short_name == 'h' && command_seen)) {
            if (!verbatim && arg[0] == '-' && arg[1] && !command_seen) {
                fprintf(stderr, "droverctl: unknown option \"%s\" (droverctl --help lists them)\n", arg);
                return -1;
            }
            command_seen = true;
            argv[kept++] = argv[i];
            continue;
        }
        if (s_globals[g].value && !value) {
            if (i + 1 >= argc) {
                fprintf(stderr, "droverctl: %s needs a value (droverctl --help)\n", arg);
                return -1;
            }
            value = argv[++i];
        }
        char name = s_globals[g].short_name                         ? s_globals[g].short_name
                    : !strcmp(s_globals[g].long_name, "key")        ? 'k'
                    : !strcmp(s_globals[g].long_name, "token")      ? 'T'
                    : !strcmp(s_globals[g].long_name, "token-file") ? 'F'
                                                                    : 's';
        bool help = false;
        if (s_apply(ctl, name, value, &help) != 0) {
            return -1;
        }
        *help_before_command |= help && !command_seen;
    }
    argv[kept] = NULL;
    return kept;
}

int drv_ctl_args_endpoint(drv_ctl_t *ctl)
{
    if (ctl->endpoint_count > 0) {
        return 0;
    }
    const char *env = getenv("DROVER_ADMIN");
    const char *path = ctl->config ? ctl->config : DRV_CTL_CONFIG;
    static char endpoint[4200];
    snprintf(endpoint, sizeof endpoint, "ipc:///tmp/drover/admin.sock");
    FILE *file = env && env[0] ? NULL : fopen(path, "r");
    if (env && env[0]) {
        snprintf(endpoint, sizeof endpoint, "%s", env);
    } else if (!file && ctl->config) {
        fprintf(stderr, "droverctl: -c %s: cannot read it (%s)\n", path, strerror(errno));
        return -1;
    } else if (file) {
        //  engine.admin.zmq, else engine.run_dir's admin.sock, as droverd
        //  takes them (docs/operations.md, "Configuration").
        char text[1 << 16];
        size_t len = fread(text, 1, sizeof text, file);
        fclose(file);
        char why[300];
        json_t *doc = drv_yaml_parse(text, len, NULL, why, sizeof why);
        json_t *engine = json_object_get(doc, "engine");
        const char *zmq = json_string_value(json_object_get(json_object_get(engine, "admin"), "zmq"));
        const char *run_dir = json_string_value(json_object_get(engine, "run_dir"));
        if (!doc && ctl->config) {
            fprintf(stderr, "droverctl: -c %s: %s\n", path, why);
            return -1;
        }
        if (zmq) {
            snprintf(endpoint, sizeof endpoint, "%s", zmq);
        } else if (run_dir) {
            snprintf(endpoint, sizeof endpoint, "ipc://%s/admin.sock", run_dir);
        }
        json_decref(doc);
    }
    ctl->endpoints[ctl->endpoint_count++] = ctl->options.endpoint = endpoint;
    return 0;
}

const char *drv_ctl_suggest(const char *name)
{
    const char *best = NULL;
    size_t best_distance = 3; // more different than that: no guess
    for (const drv_ctl_command_t *c = drv_ctl_commands; c->name; c++) {
        size_t d =
            strncmp(c->name, name, strlen(name)) == 0 && strlen(name) >= 2 ? 0 : drv_edit_distance(c->name, name);
        if (d < best_distance) {
            best = c->name;
            best_distance = d;
        }
    }
    return best;
}

int drv_ctl_completion(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)ctl;
    if (argc < 2 || strcmp(argv[1], "bash")) {
        fprintf(stderr, "droverctl: completion takes bash (try: source <(droverctl completion bash))\n");
        return DRV_CTL_USAGE;
    }
    printf(
        "# droverctl bash completion: source <(droverctl completion bash)\n"
        "_droverctl() {\n"
        "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
        "    local i word command='' sub='' endpoint=()\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        word=${COMP_WORDS[i]}\n"
        "        case $word in\n"
        "            -e|--endpoint) endpoint=(-e \"${COMP_WORDS[i+1]}\"); ((i++)); continue ;;\n"
        "            "
        "-o|--output|-t|--timeout|--key|--server-key|-f|-c|--config|--node|--generation|--limit|--for|--count|--events)"
        " ((i++)); continue ;;\n"
        "            -*) continue ;;\n"
        "        esac\n"
        "        if [[ -z $command ]]; then command=$word; elif [[ -z $sub ]]; then sub=$word; fi\n"
        "    done\n"
        "    case $prev in\n"
        "        -o|--output) COMPREPLY=($(compgen -W 'table json' -- \"$cur\")); return ;;\n"
        "        -f|-c|--config|--key|--server-key) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
        "        -e|--endpoint|-t|--timeout|--node|--generation|--limit|--for|--count|--events) return ;;\n"
        "    esac\n"
        "    if [[ $cur == -* ]]; then\n"
        "        COMPREPLY=($(compgen -W '-e --endpoint -c --config -o --output -t --timeout -w --watch --key"
        " --server-key --token-file --help' -- \"$cur\")); return\n"
        "    fi\n"
        "    local targets='droverctl \"${endpoint[@]}\" __targets 2>/dev/null'\n"
        "    case $command in\n"
        "        '') COMPREPLY=($(compgen -W '");
    for (const drv_ctl_command_t *c = drv_ctl_commands; c->name; c++) {
        if (c->name[0] != '_') {
            printf("%s%s", c == drv_ctl_commands ? "" : " ", c->name);
        }
    }
    printf("' -- \"$cur\")) ;;\n"
           "        rollout) if [[ -z $sub ]]; then\n"
           "                COMPREPLY=($(compgen -W 'status history undo pause resume promote abort' -- \"$cur\"))\n"
           "            else COMPREPLY=($(compgen -W \"$(eval $targets)\" -- \"$cur\")); fi ;;\n"
           "        get) [[ -z $sub ]] && COMPREPLY=($(compgen -W 'groups pipelines' -- \"$cur\")) ;;\n"
           "        create) [[ -z $sub ]] && COMPREPLY=($(compgen -W 'group' -- \"$cur\")) ;;\n"
           "        delete) COMPREPLY=($(compgen -W \"group $(eval $targets)\" -- \"$cur\")) ;;\n"
           "        completion) COMPREPLY=($(compgen -W 'bash' -- \"$cur\")) ;;\n"
           "        describe|shutdown|tap|apply) COMPREPLY=($(compgen -W \"$(eval $targets)\" -- \"$cur\")) ;;\n"
           "    esac\n"
           "}\n"
           "complete -F _droverctl droverctl\n");
    return DRV_CTL_OK;
}
