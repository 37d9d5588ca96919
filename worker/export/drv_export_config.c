/*  drv_export_config — the config keys exporter:http and exporter:otlp
    share (drv_export.h): their rules, checked when a spec is validated so a
    wrong value is a 422 naming it, never an instance that fails later; and
    reading them, with their defaults, when an instance starts. */
#include "drv_export_config.h"
#include "drv_export.h"
#include "drv_schemas.h"

#include "drover/drv_file.h"
#include "drover/drv_secret.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int64_t s_integer(const json_t *object, const char *key, int64_t fallback)
{
    json_t *value = json_object_get(object, key);
    return json_is_integer(value) ? json_integer_value(value) : fallback;
}

//  A key of a bound table, or its fallback (a config normalized by an
//  older droverd may lack it).
static int64_t s_bounded(const json_t *object, const drv_export_bound_t *keys, const char *key)
{
    while (strcmp(keys->key, key) != 0) {
        keys++;
    }
    return s_integer(object, key, keys->fallback);
}

int drv_export_settings_read(drv_export_settings_t *settings, const json_t *config, char *err, size_t errlen)
{
    memset(settings, 0, sizeof *settings);
    const char *compression = json_string_value(json_object_get(config, "compression"));
    settings->gzip = !compression || !strcmp(compression, "gzip");
    json_t *batch = json_object_get(config, "batch");
    settings->max_records = (size_t)s_bounded(batch, drv_export_batch_keys, "max_records");
    settings->max_bytes = (size_t)s_bounded(batch, drv_export_batch_keys, "max_bytes");
    settings->max_delay_ms = s_bounded(batch, drv_export_batch_keys, "max_delay_ms");
    json_t *retry = json_object_get(config, "retry");
    settings->initial_ms = s_bounded(retry, drv_export_retry_keys, "initial_ms");
    settings->max_ms = s_bounded(retry, drv_export_retry_keys, "max_ms");
    settings->max_elapsed_ms = s_bounded(retry, drv_export_retry_keys, "max_elapsed_secs") * 1000;
    settings->timeout_ms = s_integer(config, "timeout_ms", 30000);
    json_t *tls = json_object_get(config, "tls");
    settings->insecure = json_is_true(json_object_get(tls, "insecure_skip_verify"));
    const char *ca_file = json_string_value(json_object_get(tls, "ca_file"));
    if (ca_file) {
        char why[400];
        if (drv_file_check_readable(ca_file, why, sizeof why) != 0) {
            snprintf(err, errlen, "cannot read tls.ca_file %s", why);
            return -1;
        }
        settings->ca_file = strdup(ca_file);
    }
    const char *name;
    json_t *value;
    json_object_foreach(json_object_get(config, "headers"), name, value)
    {
        char why[400];
        char *resolved = drv_secret_resolve(json_string_value(value) ? json_string_value(value) : "", why, sizeof why);
        if (!resolved) {
            snprintf(err, errlen, "headers.%s: %s", name, why);
            return -1;
        }
        for (const char *c = resolved; *c; c++) {
            if ((unsigned char)*c < 0x20 && *c != '\t') { // a referenced file must not smuggle headers
                snprintf(err, errlen, "headers.%s: the referenced value holds a control character", name);
                free(resolved);
                return -1;
            }
        }
        char *line = NULL;
        int n = asprintf(&line, "%s: %s", name, resolved);
        free(resolved);
        if (n < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        struct curl_slist *grown = curl_slist_append(settings->headers, line);
        free(line);
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        settings->headers = grown;
    }
    return 0;
}

void drv_export_settings_free(drv_export_settings_t *settings)
{
    curl_slist_free_all(settings->headers);
    free(settings->ca_file);
    memset(settings, 0, sizeof *settings);
}
