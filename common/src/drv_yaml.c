/*  drv_yaml — libyaml events to a jansson tree.
    Plain scalars are typed the YAML 1.2 core way (null, booleans, integers,
    floats); quoted scalars are always strings. Aliases, duplicate keys and
    non-scalar keys are refused: a config file should say what it means once. */
#include "drover/drv_yaml.h"

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64
#define PATH_MAX_LEN 512

typedef struct {
    json_t *container;       // the object or array being filled
    char *pending_key;       // in a mapping: the key awaiting its value
    size_t pending_key_line; // where that key was written: what errors point at
    char path[PATH_MAX_LEN]; // dotted path of the container
} frame_t;

typedef struct {
    frame_t stack[MAX_DEPTH];
    int depth;
    json_t *root;
    json_t *lines;
    char *err;
    size_t errlen;
} builder_t;

static json_t *s_scalar_value(const yaml_event_t *event)
{
    const char *text = (const char *)event->data.scalar.value;
    size_t len = event->data.scalar.length;
    if (event->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        return json_stringn(text, len);
    }
    if (len == 0 || strcmp(text, "~") == 0 || strcmp(text, "null") == 0 || strcmp(text, "Null") == 0 ||
        strcmp(text, "NULL") == 0) {
        return json_null();
    }
    if (strcmp(text, "true") == 0 || strcmp(text, "True") == 0 || strcmp(text, "TRUE") == 0) {
        return json_true();
    }
    if (strcmp(text, "false") == 0 || strcmp(text, "False") == 0 || strcmp(text, "FALSE") == 0) {
        return json_false();
    }
    static regex_t int_re, float_re;
    static bool compiled = false;
    if (!compiled) {
        regcomp(&int_re, "^[-+]?[0-9]+$", REG_EXTENDED | REG_NOSUB);
        regcomp(&float_re, "^[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?$", REG_EXTENDED | REG_NOSUB);
        compiled = true;
    }
    if (regexec(&int_re, text, 0, NULL, 0) == 0) {
        char *end;
        long long value = strtoll(text, &end, 10);
        if (*end == 0) {
            return json_integer(value);
        }
    }
    if (regexec(&float_re, text, 0, NULL, 0) == 0) {
        return json_real(strtod(text, NULL));
    }
    return json_stringn(text, len);
}

//  Adds value (stolen) to the current container, recording its path and line.
//  Returns the value's path through path_out (for containers that get pushed).
static int s_attach(builder_t *b, json_t *value, size_t line, char *path_out)
{
    char path[PATH_MAX_LEN] = "";
    if (b->depth == 0) {
        if (b->root) {
            snprintf(b->err, b->errlen, "line %zu: more than one document", line);
            json_decref(value);
            return -1;
        }
        b->root = value;
    } else {
        frame_t *top = &b->stack[b->depth - 1];
        if (json_is_object(top->container)) {
            if (json_object_get(top->container, top->pending_key)) {
                snprintf(b->err, b->errlen, "line %zu: duplicate key \"%s\"", line, top->pending_key);
                json_decref(value);
                return -1;
            }
            snprintf(path, sizeof path, "%s%s%s", top->path, top->path[0] ? "." : "", top->pending_key);
            line = top->pending_key_line;
            json_object_set_new(top->container, top->pending_key, value);
            free(top->pending_key);
            top->pending_key = NULL;
        } else {
            snprintf(path, sizeof path, "%s[%zu]", top->path, json_array_size(top->container));
            json_array_append_new(top->container, value);
        }
    }
    if (b->lines && path[0]) {
        json_object_set_new(b->lines, path, json_integer((json_int_t)line));
    }
    if (path_out) {
        snprintf(path_out, PATH_MAX_LEN, "%s", path);
    }
    return 0;
}

static int s_push(builder_t *b, json_t *container, size_t line)
{
    if (b->depth == MAX_DEPTH) {
        snprintf(b->err, b->errlen, "line %zu: nested deeper than %d levels", line, MAX_DEPTH);
        json_decref(container);
        return -1;
    }
    char path[PATH_MAX_LEN];
    json_incref(container);
    if (s_attach(b, container, line, path) != 0) {
        json_decref(container);
        return -1;
    }
    frame_t *frame = &b->stack[b->depth++];
    frame->container = container; // the reference taken above
    frame->pending_key = NULL;
    snprintf(frame->path, sizeof frame->path, "%s", path);
    return 0;
}

static void s_pop(builder_t *b)
{
    frame_t *top = &b->stack[--b->depth];
    free(top->pending_key);
    json_decref(top->container);
}

static bool s_expecting_key(const builder_t *b)
{
    return b->depth > 0 && json_is_object(b->stack[b->depth - 1].container) &&
           b->stack[b->depth - 1].pending_key == NULL;
}

json_t *drv_yaml_parse(const char *text, size_t size, json_t **lines, char *err, size_t errlen)
{
    builder_t b = {.err = err, .errlen = errlen, .lines = lines ? json_object() : NULL};
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, size);
    bool done = false, failed = false;
    while (!done && !failed) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) {
            snprintf(err, errlen, "line %zu: %s", parser.problem_mark.line + 1,
                     parser.problem ? parser.problem : "YAML syntax error");
            failed = true;
            break;
        }
        size_t line = event.start_mark.line + 1;
        switch (event.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_ALIAS_EVENT:
            snprintf(err, errlen, "line %zu: YAML aliases are not supported", line);
            failed = true;
            break;
        case YAML_SCALAR_EVENT:
            if (s_expecting_key(&b)) {
                b.stack[b.depth - 1].pending_key =
                    strndup((const char *)event.data.scalar.value, event.data.scalar.length);
                b.stack[b.depth - 1].pending_key_line = line;
            } else {
                failed = s_attach(&b, s_scalar_value(&event), line, NULL) != 0;
            }
            break;
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            if (s_expecting_key(&b)) {
                snprintf(err, errlen, "line %zu: a key must be a plain value", line);
                failed = true;
            } else {
                json_t *container = event.type == YAML_MAPPING_START_EVENT ? json_object() : json_array();
                failed = s_push(&b, container, line) != 0;
            }
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            s_pop(&b);
            break;
        default:
            break;
        }
        yaml_event_delete(&event);
    }
    yaml_parser_delete(&parser);
    while (b.depth > 0) {
        s_pop(&b);
    }
    if (failed) {
        json_decref(b.root);
        json_decref(b.lines);
        return NULL;
    }
    if (!b.root) {
        b.root = json_object(); // an empty file is an empty document
    }
    if (lines) {
        *lines = b.lines;
    }
    return b.root;
}

int drv_yaml_line_of(const json_t *lines, const char *path)
{
    if (!lines) {
        return 0;
    }
    char buf[PATH_MAX_LEN];
    snprintf(buf, sizeof buf, "%s", path);
    while (buf[0]) {
        json_t *line = json_object_get(lines, buf);
        if (line) {
            return (int)json_integer_value(line);
        }
        char *cut = strrchr(buf, '.');
        char *bracket = strrchr(buf, '[');
        if (bracket && (!cut || bracket > cut)) {
            cut = bracket;
        }
        if (!cut) {
            break;
        }
        *cut = 0;
    }
    return 0;
}
