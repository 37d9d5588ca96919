/*  droverctl opamp — the OpAMP agent of the engine (GET /api/v1/opamp), as
    a few lines; -o json prints the document. */
#include "drv_ctl_commands.h"

#include <stdio.h>

//  The OpAMP agent: where it reports, how that goes, the last remote config.
int drv_ctl_opamp(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    json_t *body;
    int rc = drv_ctl_call(ctl, "GET", "/api/v1/opamp", NULL, NULL, &body);
    if (rc || ctl->json) {
        return rc ? rc : drv_ctl_print_json(ctl, body);
    }
    if (!json_is_true(json_object_get(body, "enabled"))) {
        printf("opamp: not configured (engine.opamp)\n");
        json_decref(body);
        return DRV_CTL_OK;
    }
    json_t *remote = json_object_get(body, "remote_config");
    printf("endpoint       %s\ninstance_uid   %s\nstate          %s\nlast contact   %s\n"
           "requests       %lld (%lld failed)\n",
           drv_ctl_str(body, "endpoint"), drv_ctl_str(body, "instance_uid"), drv_ctl_str(body, "state"),
           json_is_string(json_object_get(body, "last_contact_at")) ? drv_ctl_str(body, "last_contact_at") : "never",
           (long long)json_integer_value(json_object_get(body, "requests")),
           (long long)json_integer_value(json_object_get(body, "failures")));
    if (json_is_string(json_object_get(body, "last_error"))) {
        printf("last error     %s\n", drv_ctl_str(body, "last_error"));
    }
    if (json_is_object(remote)) {
        printf("remote config  %s (hash %s)%s%s\n", drv_ctl_str(remote, "status"), drv_ctl_str(remote, "hash"),
               drv_ctl_str(remote, "error")[0] ? ": " : "", drv_ctl_str(remote, "error"));
    } else {
        printf("remote config  none received\n");
    }
    json_decref(body);
    return DRV_CTL_OK;
}
