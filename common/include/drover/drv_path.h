/*  drv_path — where a field is in a record, written as OpenTelemetry's
    OTTL writes it (docs/operations.md, "Record paths"): a plain name is a
    top-level field (`level`, and `http.method` too: a name with dots is
    still one field); `attributes["http.method"]`, `resource["service.name"]`,
    `body["user"]["id"]` go into maps, a key in double quotes (\" and \\
    escaped); `scope.name` and `scope.version` are the scope's fields. */
#ifndef DRV_PATH_H
#define DRV_PATH_H

#include <stdbool.h>
#include <stddef.h>

#define DRV_PATH_MAX_DEPTH 8

typedef struct {
    char *keys[DRV_PATH_MAX_DEPTH]; // malloc'd, NUL-terminated (a key holds no NUL)
    size_t lengths[DRV_PATH_MAX_DEPTH];
    int depth;
} drv_path_t;

//  Parses text: 0, or -1 with what is wrong and where in err.
int drv_path_parse(const char *text, drv_path_t *out, char *err, size_t errlen);
void drv_path_free(drv_path_t *path);

#endif
