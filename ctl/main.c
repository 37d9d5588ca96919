/*  droverctl — the operator CLI. Talks to droverd's zmq admin socket.
    Global options go before or after the command; every command takes --help. */
#include "drv_ctl_args.h"
#include "drv_ctl_commands.h"

#include <stdio.h>
#include <string.h>

static void s_usage(FILE *out)
{
    fprintf(out, "usage: droverctl [options] COMMAND [ARGS] [options]\n\n"
                 "options:\n"
                 "  -e, --endpoint ENDPOINT  admin socket, tcp:// or ipc://, or the HTTP admin, http(s)://host:port\n"
                 "                           (default $DROVER_ADMIN, else the config file's engine.admin.zmq\n"
                 "                           or engine.run_dir/admin.sock, else ipc:///tmp/drover/admin.sock);\n"
                 "                           apply takes several: one engine after another\n"
                 "  -c, --config FILE        droverd's config file, to find its admin socket when no -e or\n"
                 "                           $DROVER_ADMIN says (default " DRV_CTL_CONFIG " when it is there)\n"
                 "  -o, --output table|json|yaml  human tables (default), the engine's JSON, or it as YAML\n"
                 "  -t, --timeout SECS       how long to wait for an answer (default 10)\n"
                 "  -w, --watch              status, rollout status: keep watching\n"
                 "      --key FILE           your CURVE certificate (secret), for a tcp:// endpoint\n"
                 "      --server-key FILE|KEY  the engine's public CURVE certificate or Z85 key\n"
                 "      --token-file FILE    http(s):// endpoints: the admin token, the file's first line\n"
                 "                           (default $DROVER_TOKEN; --token TOKEN works too, but shows it\n"
                 "                           to every user in the process list)\n\n"
                 "commands:\n");
    for (const drv_ctl_command_t *c = drv_ctl_commands; c->name; c++) {
        if (c->name[0] != '_') {
            fprintf(out, "  %-10s %s\n", c->name, c->summary);
        }
    }
    fprintf(out, "\nexit codes: 0 ok, 1 the engine said no (its message on stderr), 2 usage, 3 unreachable\n");
}

//  The option of c->options that arg is: 1 a flag or literal, 2 one that
//  takes a value (inline when *inline_value), 0 none.
static int s_option(const drv_ctl_command_t *c, const char *arg, bool *inline_value)
{
    size_t arg_len = strcspn(arg, "=");
    for (const char *o = c->options; *o;) {
        size_t len = strcspn(o, " ");
        const char *eq = memchr(o, '=', len);
        if (eq && eq + 1 == o + len && (size_t)(eq - o) == arg_len && !strncmp(arg, o, arg_len)) {
            *inline_value = arg[arg_len] == '=';
            return 2;
        }
        if (len == strlen(arg) && !strncmp(arg, o, len)) {
            return 1;
        }
        o += len + (o[len] == ' ');
    }
    return 0;
}

//  Every argument is one the command takes: an unknown option or one
//  argument too many is refused before anything is asked of the engine
//  (a typo must never be read as a name, nor a flag go unheard).
static bool s_arguments_ok(const drv_ctl_command_t *c, int argc, char **argv)
{
    int positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool inline_value = false;
        int kind = arg[0] == '-' && arg[1] ? s_option(c, arg, &inline_value) : -1;
        if (kind == 0) {
            fprintf(stderr, "droverctl: %s does not take \"%s\" (nothing was done)\nusage: droverctl %s %s\n", c->name,
                    arg, c->name, c->usage);
            return false;
        }
        if (kind == 2 && !inline_value && ++i >= argc) {
            fprintf(stderr, "droverctl: %s needs a value\nusage: droverctl %s %s\n", arg, c->name, c->usage);
            return false;
        }
        if (kind < 0 && c->max_args >= 0 && ++positional > c->max_args) {
            fprintf(stderr, "droverctl: %s takes %s, not \"%s\" (nothing was done)\nusage: droverctl %s %s\n", c->name,
                    c->max_args ? "fewer arguments" : "no arguments", arg, c->name, c->usage);
            return false;
        }
    }
    return true;
}

int main(int argc, char *argv[])
{
    drv_ctl_t ctl = {.options = {.timeout_ms = 10000}};
    ctl.options.token = getenv("DROVER_TOKEN");
    bool help = false;
    argc = drv_ctl_args_take(&ctl, argc, argv, &help);
    if (argc < 0) {
        return DRV_CTL_USAGE;
    }
    if (help) {
        s_usage(stdout);
        return DRV_CTL_OK;
    }
    if (argc < 2) {
        s_usage(stderr);
        return DRV_CTL_USAGE;
    }
    const char *name = argv[1];
    if (drv_ctl_args_endpoint(&ctl) != 0) {
        return DRV_CTL_USAGE;
    }
    if (ctl.endpoint_count > 1 && strcmp(name, "apply")) {
        fprintf(stderr, "droverctl: -e given %d times: only apply goes through several engines (node by node)\n",
                ctl.endpoint_count);
        return DRV_CTL_USAGE;
    }
    for (const drv_ctl_command_t *c = drv_ctl_commands; c->name; c++) {
        if (strcmp(c->name, name)) {
            continue;
        }
        for (int i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                printf("usage: droverctl [options] %s %s\n\n%s\n", c->name, c->usage, c->summary);
                return DRV_CTL_OK;
            }
        }
        if (!s_arguments_ok(c, argc - 1, argv + 1)) {
            return DRV_CTL_USAGE;
        }
        if (ctl.watch && strcmp(name, "status") && strcmp(name, "rollout")) {
            fprintf(stderr, "droverctl: -w works with status and rollout status, not %s\n", name);
            return DRV_CTL_USAGE;
        }
        zsys_handler_set(NULL);
        int rc = c->run(&ctl, argc - 1, argv + 1);
        zsys_shutdown();
        return rc;
    }
    const char *guess = drv_ctl_suggest(name);
    if (guess) {
        fprintf(stderr, "droverctl: unknown command \"%s\"; did you mean: droverctl %s\n", name, guess);
    } else {
        fprintf(stderr, "droverctl: unknown command \"%s\"\n\n", name);
        s_usage(stderr);
    }
    return DRV_CTL_USAGE;
}
