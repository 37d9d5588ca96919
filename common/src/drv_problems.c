/*  drv_problems — a growable list of {path, message}. */
#include "drover/drv_problems.h"
#include "drover/drv_utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *path;    // dotted path into the document, e.g. nodes.keep.config.op
    char *message; // what is wrong there
} problem_t;

struct drv_problems_t {
    problem_t *items; // count used, capacity allocated
    size_t count;
    size_t capacity;
};

drv_problems_t *drv_problems_new(void)
{
    return calloc(1, sizeof(drv_problems_t));
}

void drv_problems_destroy(drv_problems_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_problems_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++) {
        free(self->items[i].path);
        free(self->items[i].message);
    }
    free(self->items);
    free(self);
    *self_p = NULL;
}

void drv_problems_add(drv_problems_t *self, const char *path, const char *fmt, ...)
{
    if (self->count == self->capacity) {
        size_t capacity = self->capacity ? self->capacity * 2 : 8;
        problem_t *items = realloc(self->items, capacity * sizeof *items);
        if (!items) {
            return;
        }
        self->items = items;
        self->capacity = capacity;
    }
    char message[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    self->items[self->count].path = strdup(path);
    self->items[self->count].message = strdup(message);
    self->count++;
}

size_t drv_problems_count(const drv_problems_t *self)
{
    return self->count;
}

const char *drv_problems_path(const drv_problems_t *self, size_t index)
{
    return index < self->count ? self->items[index].path : NULL;
}

const char *drv_problems_message(const drv_problems_t *self, size_t index)
{
    return index < self->count ? self->items[index].message : NULL;
}

json_t *drv_problems_to_json(const drv_problems_t *self)
{
    json_t *list = json_array();
    for (size_t i = 0; i < self->count; i++) {
        json_array_append_new(list,
                              json_pack("{s:s, s:s}", "path", self->items[i].path, "message", self->items[i].message));
    }
    return list;
}

json_t *drv_problems_error(const char *kind, const char *message)
{
    char *clean = drv_utf8_sanitize(message, strlen(message));
    json_t *body = json_pack("{s:{s:s, s:s}}", "error", "kind", kind, "message", clean ? clean : "");
    free(clean);
    return body;
}

void drv_problems_unknown_keys(drv_problems_t *problems, const json_t *obj, const char *allowed, const char *prefix)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        char word[80];
        snprintf(word, sizeof word, " %s ", key);
        char padded[300];
        snprintf(padded, sizeof padded, " %s ", allowed);
        if (!strstr(padded, word)) {
            char path[300];
            snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
            drv_problems_add(problems, path, "unknown key \"%s\" (allowed: %s)", key, allowed);
        }
    }
}
