/*  drv_export_config — the shared exporter config read into settings
    (drv_export.h says what each means). */
#ifndef DRV_EXPORT_CONFIG_H
#define DRV_EXPORT_CONFIG_H

#include "drv_schemas.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    bool gzip;
    struct curl_slist *headers; // "Name: value" lines from config.headers
    size_t max_records;
    size_t max_bytes;
    int64_t max_delay_ms;
    int64_t initial_ms;
    int64_t max_ms;
    int64_t max_elapsed_ms; // 0: retried for ever
    char *ca_file;          // NULL: the system's
    bool insecure;
    int64_t timeout_ms; // one attempt, connecting included
} drv_export_settings_t;

//  Reads a normalized config. Returns 0, or -1 with the reason in err.
int drv_export_settings_read(drv_export_settings_t *settings, const json_t *config, char *err, size_t errlen);
void drv_export_settings_free(drv_export_settings_t *settings);

#endif
