/*  drv_spec_diff — what a change to a spec changes, path by path (see
    drv_spec.h): maps are walked key by key; anything else (a list, a
    scalar) is compared whole. A value whose JSON is longer than
    VALUE_MAX is shown by its size instead; a text of several lines (a Lua
    script) changed is also shown as a line diff, and so is a map or a list
    (a node added, removed or replaced whole), as the YAML lines of its
    config, so that what is about to ship (a regex) can be read. */
#include "drover/drv_line_diff.h"
#include "drover/drv_spec.h"
#include "drover/drv_yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VALUE_MAX 120
#define DIFF_LINES 200 // of a script's line diff, at most

//  The value as shown in a change: itself, or "(N bytes of JSON)".
static json_t *s_shown(const json_t *value)
{
    char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len = text ? strlen(text) : 0;
    free(text);
    if (len <= VALUE_MAX) {
        return json_deep_copy(value);
    }
    char size[64];
    snprintf(size, sizeof size, "(%zu bytes of JSON)", len);
    return json_string(size);
}

static void s_add(json_t *changes, size_t max, const char *path, const json_t *from, const json_t *to)
{
    if (json_array_size(changes) >= max) {
        return;
    }
    json_t *change = json_pack("{s:s}", "path", path);
    if (from) {
        json_object_set_new(change, "from", s_shown(from));
    }
    if (to) {
        json_object_set_new(change, "to", s_shown(to));
    }
    if (json_is_string(from) && json_is_string(to) &&
        (strchr(json_string_value(from), '\n') || strchr(json_string_value(to), '\n'))) {
        json_object_set_new(change, "diff", drv_line_diff(json_string_value(from), json_string_value(to), DIFF_LINES));
    } else if (json_is_object(from) || json_is_array(from) || json_is_object(to) || json_is_array(to)) {
        char *a = from ? drv_yaml_emit(from) : NULL, *b = to ? drv_yaml_emit(to) : NULL;
        if ((a || !from) && (b || !to)) {
            json_object_set_new(change, "diff", drv_line_diff(a ? a : "", b ? b : "", DIFF_LINES));
        }
        free(a);
        free(b);
    }
    json_array_append_new(changes, change);
}

static void s_walk(json_t *changes, size_t max, const char *path, const json_t *a, const json_t *b)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *key;
        json_t *value;
        char sub[512];
        json_object_foreach((json_t *)a, key, value)
        {
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
            s_walk(changes, max, sub, value, json_object_get(b, key));
        }
        json_object_foreach((json_t *)b, key, value)
        {
            if (!json_object_get(a, key)) {
                snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
                s_add(changes, max, sub, NULL, value);
            }
        }
        return;
    }
    if (!b) {
        s_add(changes, max, path, a, NULL);
    } else if (!json_equal((json_t *)a, (json_t *)b)) {
        s_add(changes, max, path, a, b);
    }
}

json_t *drv_spec_diff(const json_t *before, const json_t *after, size_t max)
{
    json_t *changes = json_array();
    if (before && after) {
        s_walk(changes, max, "", before, after);
    }
    return changes;
}
