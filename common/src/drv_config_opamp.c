/*  drv_config_opamp — engine.opamp (docs/operations.md, OpAMP): where droverd's OpAMP
    agent reports to, checked when the file is read, with its defaults
    filled in (drv_config.h says what the result holds). */
#include "drv_config_internal.h"

#include "drover/drv_secret.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *drv_config_opamp(json_t *opamp, const char *state_file, const char *run_dir, drv_problems_t *problems)
{
    if (!opamp || json_is_null(opamp)) {
        return NULL;
    }
    if (!json_is_object(opamp)) {
        drv_problems_add(problems, "engine.opamp",
                         "must be a map with endpoint (and headers, tls, "
                         "poll_interval_secs, instance_uid_file, allowed_env)");
        return NULL;
    }
    drv_problems_unknown_keys(problems, opamp, "endpoint headers tls poll_interval_secs instance_uid_file allowed_env",
                              "engine.opamp");
    const char *endpoint = json_string_value(json_object_get(opamp, "endpoint"));
    if (!endpoint || (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0) ||
        strlen(endpoint) > 2048 || strpbrk(endpoint, " \t\r\n")) {
        drv_problems_add(problems, "engine.opamp.endpoint",
                         "must be the OpAMP server's http:// or https:// URL (plain HTTP transport), e.g. "
                         "https://opamp.example:4320/v1/opamp");
    }
    json_t *headers = json_object_get(opamp, "headers");
    const char *name;
    json_t *value;
    if (headers && !json_is_object(headers)) {
        drv_problems_add(problems, "engine.opamp.headers", "must be a map of header names to strings");
    }
    json_object_foreach(headers, name, value)
    {
        char err[300];
        const char *text = json_string_value(value);
        if (!text || !name[0] || strpbrk(name, ": \t\r\n") || strpbrk(text, "\r\n")) {
            drv_problems_add(problems, "engine.opamp.headers", "%s: must be a header name and a one-line string", name);
        } else if (drv_secret_check(text, NULL, NULL, NULL, err, sizeof err) != 0) {
            drv_problems_add(problems, "engine.opamp.headers", "%s: %s", name, err);
        }
    }
    json_t *tls = json_object_get(opamp, "tls");
    if (tls && !json_is_object(tls)) {
        drv_problems_add(problems, "engine.opamp.tls", "must be a map with ca_file, insecure_skip_verify");
    }
    drv_problems_unknown_keys(problems, tls, "ca_file insecure_skip_verify", "engine.opamp.tls");
    json_t *ca = json_object_get(tls, "ca_file");
    if (ca && (!json_is_string(ca) || json_string_value(ca)[0] != '/')) {
        drv_problems_add(problems, "engine.opamp.tls.ca_file", "must be an absolute path");
    }
    json_t *insecure = json_object_get(tls, "insecure_skip_verify");
    if (insecure && !json_is_boolean(insecure)) {
        drv_problems_add(problems, "engine.opamp.tls.insecure_skip_verify", "must be true or false");
    }
    json_t *poll = json_object_get(opamp, "poll_interval_secs");
    if (poll && (!json_is_integer(poll) || json_integer_value(poll) < 1 || json_integer_value(poll) > 86400)) {
        drv_problems_add(problems, "engine.opamp.poll_interval_secs", "must be an integer from 1 to 86400");
    }
    json_t *uid_file = json_object_get(opamp, "instance_uid_file");
    if (uid_file && (!json_is_string(uid_file) || json_string_value(uid_file)[0] != '/')) {
        drv_problems_add(problems, "engine.opamp.instance_uid_file", "must be an absolute path");
    }
    //  What ${env:} may name in a remote config: the server must not read
    //  droverd's environment at will (docs/security.md).
    json_t *allowed_env = json_object_get(opamp, "allowed_env");
    size_t index;
    json_t *item;
    bool names = json_is_array(allowed_env) || !allowed_env;
    json_array_foreach(allowed_env, index, item)
    {
        const char *text = json_string_value(item);
        names = names && text && text[0] && !isdigit((unsigned char)text[0]) &&
                strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == strlen(text);
    }
    if (!names) {
        drv_problems_add(problems, "engine.opamp.allowed_env",
                         "must be a list of environment variable names (letters, digits and _)");
    }
    //  The normalized form: every key, defaults filled in.
    char fallback[4200];
    const char *slash = state_file ? strrchr(state_file, '/') : NULL;
    if (slash) {
        snprintf(fallback, sizeof fallback, "%.*s/opamp-uid", (int)(slash - state_file), state_file);
    } else {
        snprintf(fallback, sizeof fallback, "%s/opamp-uid", run_dir);
    }
    return json_pack("{s:s, s:o, s:{s:O?, s:b}, s:I, s:s, s:o}", "endpoint", endpoint ? endpoint : "", "headers",
                     json_is_object(headers) ? json_deep_copy(headers) : json_object(), "tls", "ca_file",
                     json_is_string(ca) ? ca : NULL, "insecure_skip_verify", json_is_true(insecure),
                     "poll_interval_secs", (json_int_t)(json_is_integer(poll) ? json_integer_value(poll) : 30),
                     "instance_uid_file", json_is_string(uid_file) ? json_string_value(uid_file) : fallback,
                     "allowed_env", names && allowed_env ? json_deep_copy(allowed_env) : json_array());
}
