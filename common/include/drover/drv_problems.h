/*  drv_problems — a list of {path, message} validation problems. Validators
    collect every problem instead of stopping at the first, so that an operator
    fixes a spec in one round trip. */
#ifndef DRV_PROBLEMS_H
#define DRV_PROBLEMS_H

#include <jansson.h>
#include <stddef.h>

typedef struct drv_problems_t drv_problems_t;

drv_problems_t *drv_problems_new(void);
void drv_problems_destroy(drv_problems_t **self_p);

void drv_problems_add(drv_problems_t *self, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
size_t drv_problems_count(const drv_problems_t *self);
const char *drv_problems_path(const drv_problems_t *self, size_t index);
const char *drv_problems_message(const drv_problems_t *self, size_t index);

//  Every key of obj is one of allowed (space-separated); the others are
//  problems at prefix.KEY.
void drv_problems_unknown_keys(drv_problems_t *self, const json_t *obj, const char *allowed, const char *prefix);

//  [{path, message}, ...] — the `details` of an invalid_request error.
json_t *drv_problems_to_json(const drv_problems_t *self);

//  An error body, {error: {kind, message}} (the admin API's and the HTTP
//  receivers'). Messages quote what clients sent, which need not be UTF-8:
//  the message is made valid first, so the body is always made.
json_t *drv_problems_error(const char *kind, const char *message);

#endif
