/*  droverctl — the operator CLI. Talks to droverd's zmq admin socket.
    Global options go before or after the command; every command takes --help. */
#include "drv_ctl_args.h"
#include "drv_ctl_commands.h"

#include <stdio.h>
#include <string.h>

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: droverctl [options] COMMAND [ARGS] [options]\n\n"
            "options:\n"
            "  -e, --endpoint ENDPOINT  admin socket, tcp:// or ipc://, or the HTTP admin, http(s)://host:port\n"
            "                           (default $DROVER_ADMIN, or ipc:///tmp/drover/admin.sock);\n"
            "                           apply takes several: one engine after another\n"
            "  -o, --output table|json|yaml  human tables (default), the engine's JSON, or it as YAML\n"
            "  -t, --timeout SECS       how long to wait for an answer (default 10)\n"
            "  -w, --watch              status, rollout status: keep watching\n"
            "      --key FILE           your CURVE certificate (secret), for a tcp:// endpoint\n"
            "      --server-key FILE|KEY  the engine's public CURVE certificate or Z85 key\n"
            "      --token TOKEN        http(s):// endpoints: the admin token (default $DROVER_TOKEN)\n\n"
            "commands:\n");
    for (const drv_ctl_command_t *c = drv_ctl_commands; c->name; c++) {
        if (c->name[0] != '_') {
            fprintf(out, "  %-10s %s\n", c->name, c->summary);
        }
    }
    fprintf(out, "\nexit codes: 0 ok, 1 the engine said no (its message on stderr), 2 usage, 3 unreachable\n");
}

int main(int argc, char *argv[])
{
    drv_ctl_t ctl = {.options = {.timeout_ms = 10000}};
    ctl.options.endpoint = getenv("DROVER_ADMIN") ? getenv("DROVER_ADMIN") : "ipc:///tmp/drover/admin.sock";
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
    if (ctl.endpoint_count == 0) {
        ctl.endpoints[ctl.endpoint_count++] = ctl.options.endpoint;
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
        if (!c->usage[0] && argc > 2) {
            fprintf(stderr, "droverctl: %s takes no arguments, got \"%s\" (droverctl %s --help)\n", c->name, argv[2],
                    c->name);
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
