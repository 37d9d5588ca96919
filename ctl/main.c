/*  droverctl — the operator CLI. Talks to droverd's zmq admin socket.
    Global options come before the command; every command takes --help. */
#include "drv_ctl_commands.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: droverctl [options] COMMAND [ARGS]\n\n"
            "options:\n"
            "  -e, --endpoint ENDPOINT  admin socket (default $DROVER_ADMIN, or ipc:///tmp/drover/admin.sock);\n"
            "                           apply takes several: one engine after another\n"
            "  -o, --output table|json  human tables (default) or the engine's JSON\n"
            "  -t, --timeout SECS       how long to wait for an answer (default 10)\n"
            "      --key FILE           your CURVE certificate (secret), for a tcp:// endpoint\n"
            "      --server-key FILE|KEY  the engine's public CURVE certificate or Z85 key\n\n"
            "commands:\n");
    for (const drv_ctl_command_t *c = drv_ctl_commands; c->name; c++) {
        fprintf(out, "  %-9s %s\n", c->name, c->summary);
    }
    fprintf(out, "\nexit codes: 0 ok, 1 the engine said no (its message on stderr), 2 usage, 3 unreachable\n");
}

int main(int argc, char *argv[])
{
    drv_ctl_t ctl = {.options = {.timeout_ms = 10000}};
    ctl.options.endpoint = getenv("DROVER_ADMIN") ? getenv("DROVER_ADMIN") : "ipc:///tmp/drover/admin.sock";
    static struct option options[] = {{"endpoint", required_argument, 0, 'e'},
                                      {"output", required_argument, 0, 'o'},
                                      {"timeout", required_argument, 0, 't'},
                                      {"key", required_argument, 0, 'k'},
                                      {"server-key", required_argument, 0, 's'},
                                      {"help", no_argument, 0, 'h'},
                                      {0, 0, 0, 0}};
    int opt;
    //  "+": stop at the first non-option, which is the command.
    while ((opt = getopt_long(argc, argv, "+e:o:t:h", options, NULL)) != -1) {
        switch (opt) {
        case 'e':
            if (ctl.endpoint_count == DRV_CTL_MAX_ENDPOINTS) {
                fprintf(stderr, "droverctl: at most %d -e endpoints\n", DRV_CTL_MAX_ENDPOINTS);
                return DRV_CTL_USAGE;
            }
            ctl.endpoints[ctl.endpoint_count++] = optarg;
            ctl.options.endpoint = ctl.endpoints[0];
            break;
        case 'o':
            if (strcmp(optarg, "json") && strcmp(optarg, "table")) {
                fprintf(stderr, "droverctl: -o takes table or json\n");
                return DRV_CTL_USAGE;
            }
            ctl.json = !strcmp(optarg, "json");
            break;
        case 't':
            ctl.options.timeout_ms = atoi(optarg) * 1000;
            break;
        case 'k':
            ctl.options.client_key = optarg;
            break;
        case 's':
            ctl.options.server_key = optarg;
            break;
        case 'h':
            s_usage(stdout);
            return DRV_CTL_OK;
        default:
            s_usage(stderr);
            return DRV_CTL_USAGE;
        }
    }
    if (optind >= argc) {
        s_usage(stderr);
        return DRV_CTL_USAGE;
    }
    const char *name = argv[optind];
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
        for (int i = optind + 1; i < argc; i++) {
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                printf("usage: droverctl [options] %s %s\n\n%s\n", c->name, c->usage, c->summary);
                return DRV_CTL_OK;
            }
        }
        zsys_handler_set(NULL);
        int rc = c->run(&ctl, argc - optind, argv + optind);
        zsys_shutdown();
        return rc;
    }
    fprintf(stderr, "droverctl: unknown command \"%s\"\n\n", name);
    s_usage(stderr);
    return DRV_CTL_USAGE;
}
