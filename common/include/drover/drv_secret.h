/*  drv_secret — references that keep secrets out of specs. A value of a
    secret key (drv_config_key_t.secret: exporter headers) may be
    "${env:NAME}", droverd's environment variable NAME, or
    "${file:/PATH}", a regular file's text (without its last line break,
    at most DRV_SECRET_MAX_BYTES), resolved by the instance when it starts.
    The spec, its hash, GET and the state file then hold the reference,
    never the secret: rotating the secret is a replace of the same spec
    with the file or the variable changed (a restart of the instance). */
#ifndef DRV_SECRET_H
#define DRV_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#define DRV_SECRET_MAX_BYTES 65536

//  True when value has the shape of a reference (well-formed or not).
bool drv_secret_is_ref(const char *value);
//  0 when value is a well-formed reference (or no reference at all); -1
//  with the reason in err. env_names: the only variables ${env:} may name
//  (NULL-terminated; NULL: any); path_ok says whether a file may be read
//  there (engine.data_dirs); NULL: anywhere.
int drv_secret_check(const char *value, const char *const *env_names,
                     bool (*path_ok)(const void *arg, const char *path), const void *arg, char *err, size_t errlen);
//  The value with its reference resolved (a copy of value when it is none);
//  NULL with the reason in err.
char *drv_secret_resolve(const char *value, char *err, size_t errlen);

#endif
