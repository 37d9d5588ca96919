/*  drv_yaml_emit — a jansson document written as block-style YAML with
    libyaml's emitter (the OpAMP effective config). A string that would
    read back as something else (a number, true, null, "") is quoted. */
#include "drover/drv_yaml.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct {
    char *data;
    size_t len, cap;
} out_t;

static int s_write(void *arg, unsigned char *buffer, size_t size)
{
    out_t *out = arg;
    if (out->len + size + 1 > out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 4096;
        while (cap < out->len + size + 1) {
            cap *= 2;
        }
        char *grown = realloc(out->data, cap);
        if (!grown) {
            return 0;
        }
        out->data = grown;
        out->cap = cap;
    }
    memcpy(out->data + out->len, buffer, size);
    out->len += size;
    out->data[out->len] = 0;
    return 1;
}

//  True when a plain scalar of text would be read as a string.
static bool s_plain_is_string(const char *text)
{
    json_t *parsed = drv_yaml_parse(text, strlen(text), NULL, NULL, 0);
    bool string = text[0] && json_is_string(parsed) && !strcmp(json_string_value(parsed), text);
    json_decref(parsed);
    return string;
}

static int s_scalar(yaml_emitter_t *emitter, const char *text, bool string)
{
    yaml_event_t event;
    bool plain = !string || s_plain_is_string(text);
    yaml_scalar_event_initialize(&event, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), plain, 1,
                                 plain ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    return yaml_emitter_emit(emitter, &event);
}

static int s_node(yaml_emitter_t *emitter, const json_t *node)
{
    yaml_event_t event;
    char number[64];
    switch (json_typeof(node)) {
    case JSON_OBJECT: {
        yaml_mapping_start_event_initialize(&event, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
        int ok = yaml_emitter_emit(emitter, &event);
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)node, key, value)
        {
            ok = ok && s_scalar(emitter, key, true) && s_node(emitter, value);
        }
        yaml_mapping_end_event_initialize(&event);
        return ok && yaml_emitter_emit(emitter, &event);
    }
    case JSON_ARRAY: {
        yaml_sequence_start_event_initialize(&event, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        int ok = yaml_emitter_emit(emitter, &event);
        size_t i;
        json_t *value;
        json_array_foreach((json_t *)node, i, value)
        {
            ok = ok && s_node(emitter, value);
        }
        yaml_sequence_end_event_initialize(&event);
        return ok && yaml_emitter_emit(emitter, &event);
    }
    case JSON_STRING:
        return s_scalar(emitter, json_string_value(node), true);
    case JSON_INTEGER:
        snprintf(number, sizeof number, "%lld", (long long)json_integer_value(node));
        return s_scalar(emitter, number, false);
    case JSON_REAL:
        snprintf(number, sizeof number, "%.17g", json_real_value(node));
        return s_scalar(emitter, number, false);
    case JSON_TRUE:
        return s_scalar(emitter, "true", false);
    case JSON_FALSE:
        return s_scalar(emitter, "false", false);
    default:
        return s_scalar(emitter, "null", false);
    }
}

char *drv_yaml_emit(const json_t *doc)
{
    yaml_emitter_t emitter;
    yaml_event_t event;
    out_t out = {0};
    if (!yaml_emitter_initialize(&emitter)) {
        return NULL;
    }
    yaml_emitter_set_output(&emitter, s_write, &out);
    yaml_emitter_set_unicode(&emitter, 1);
    yaml_emitter_set_width(&emitter, 120);
    yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING);
    int ok = yaml_emitter_emit(&emitter, &event);
    yaml_document_start_event_initialize(&event, NULL, NULL, NULL, 1);
    ok = ok && yaml_emitter_emit(&emitter, &event) && s_node(&emitter, doc);
    yaml_document_end_event_initialize(&event, 1);
    ok = ok && yaml_emitter_emit(&emitter, &event);
    yaml_stream_end_event_initialize(&event);
    ok = ok && yaml_emitter_emit(&emitter, &event);
    yaml_emitter_delete(&emitter);
    if (!ok) {
        free(out.data);
        return NULL;
    }
    return out.data;
}
