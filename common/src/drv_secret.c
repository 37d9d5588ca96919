/*  drv_secret — see the header. */
#include "drover/drv_secret.h"

#include "drover/drv_file.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool drv_secret_is_ref(const char *value)
{
    size_t len = value ? strlen(value) : 0;
    return len >= 3 && !strncmp(value, "${", 2) && value[len - 1] == '}';
}

//  The kind ("env" or "file") and what follows its colon, inside ${...}.
static bool s_split(const char *value, char *kind, size_t kind_len, const char **arg, size_t *arg_len)
{
    const char *inner = value + 2;
    size_t inner_len = strlen(value) - 3;
    const char *colon = memchr(inner, ':', inner_len);
    if (!colon || (size_t)(colon - inner) >= kind_len) {
        return false;
    }
    snprintf(kind, kind_len, "%.*s", (int)(colon - inner), inner);
    *arg = colon + 1;
    *arg_len = inner_len - (size_t)(colon - inner) - 1;
    return true;
}

int drv_secret_check(const char *value, const char *const *env_names,
                     bool (*path_ok)(const void *arg, const char *path), const void *arg, char *err, size_t errlen)
{
    if (!drv_secret_is_ref(value)) {
        return 0;
    }
    char kind[8];
    const char *what;
    size_t what_len;
    if (!s_split(value, kind, sizeof kind, &what, &what_len) || (strcmp(kind, "env") && strcmp(kind, "file"))) {
        snprintf(err, errlen, "a reference is ${env:NAME} or ${file:/PATH}");
        return -1;
    }
    if (!strcmp(kind, "env")) {
        bool name = what_len > 0 && !isdigit((unsigned char)what[0]);
        for (size_t i = 0; i < what_len; i++) {
            name = name && (isalnum((unsigned char)what[i]) || what[i] == '_');
        }
        if (!name) {
            snprintf(err, errlen, "${env:NAME}: NAME must be letters, digits and _");
            return -1;
        }
        for (size_t i = 0; env_names && env_names[i]; i++) {
            if (strlen(env_names[i]) == what_len && !strncmp(env_names[i], what, what_len)) {
                return 0;
            }
        }
        if (env_names) {
            snprintf(err, errlen, "${env:%.*s}: not among the variables engine.opamp.allowed_env lists", (int)what_len,
                     what);
            return -1;
        }
        return 0;
    }
    char path[4096];
    if (what_len == 0 || what_len >= sizeof path || what[0] != '/') {
        snprintf(err, errlen, "${file:PATH}: PATH must be an absolute path");
        return -1;
    }
    snprintf(path, sizeof path, "%.*s", (int)what_len, what);
    if (path_ok && !path_ok(arg, path)) {
        snprintf(err, errlen, "${file:%s}: outside engine.data_dirs and run_dir", path);
        return -1;
    }
    return 0;
}

char *drv_secret_resolve(const char *value, char *err, size_t errlen)
{
    if (!drv_secret_is_ref(value)) {
        return strdup(value);
    }
    char kind[8];
    const char *what;
    size_t what_len;
    if (!s_split(value, kind, sizeof kind, &what, &what_len)) {
        snprintf(err, errlen, "not a reference");
        return NULL;
    }
    char name[4096];
    snprintf(name, sizeof name, "%.*s", (int)what_len, what);
    if (!strcmp(kind, "env")) {
        const char *found = getenv(name);
        if (!found) {
            snprintf(err, errlen, "${env:%s}: droverd's environment has no %s", name, name);
            return NULL;
        }
        return strdup(found);
    }
    size_t size;
    char why[300];
    char *text = drv_file_read(name, DRV_SECRET_MAX_BYTES, &size, why, sizeof why);
    if (!text) {
        snprintf(err, errlen, "${file:...}: %s", why);
        return NULL;
    }
    while (size > 0 && (text[size - 1] == '\n' || text[size - 1] == '\r')) {
        text[--size] = 0;
    }
    return text;
}
