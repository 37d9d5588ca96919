/*  drv_ottl — see drover/drv_ottl.h: the grammar, a recursive descent
    over the tokens of drv_ottl_lex.c, asking drv_ottl_names.c what a name
    is; every node remembers its byte offset for the errors. */
#include "drover/drv_ottl.h"
#include "drv_ottl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static drv_ottl_node_t *s_node(parser_t *p, drv_ottl_kind_t kind, size_t offset)
{
    drv_ottl_node_t *node = calloc(1, sizeof *node);
    if (!node) {
        drv_ottl_lex_fail(p, offset, "out of memory");
        return NULL;
    }
    node->kind = kind;
    node->offset = offset;
    return node;
}

static drv_ottl_node_t *s_or(parser_t *p);

//  name(args): a converter, or (editor) a statement's editor.
static drv_ottl_node_t *s_call(parser_t *p, const char *name, size_t namelen, size_t offset, bool editor)
{
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)namelen, name);
    drv_ottl_function_t function;
    int min_args, max_args;
    const char *close = NULL;
    if (drv_ottl_function_find(word, &function, &min_args, &max_args, &close) != 0) {
        drv_ottl_lex_fail(p, offset, "%s: no such %s%s%s%s", word, editor ? "editor" : "converter",
                          close ? " (did you mean " : "", close ? close : "", close ? "?)" : "");
        return NULL;
    }
    if (editor != (function >= DRV_OTTL_SET)) {
        drv_ottl_lex_fail(p, offset,
                          editor ? "%s is a converter: a statement begins with an editor (set, delete_key, ...)"
                                 : "%s is an editor: it begins a statement, and is no value",
                          word);
        return NULL;
    }
    drv_ottl_node_t *node = s_node(p, DRV_OTTL_CALL, offset);
    if (!node) {
        return NULL;
    }
    node->function = function;
    drv_ottl_lex_next(p); // (
    while (!p->failed && !drv_ottl_lex_is(p, ")")) {
        if (node->nargs == DRV_OTTL_MAX_ARGS) {
            drv_ottl_lex_fail(p, p->start, "more than %d arguments", DRV_OTTL_MAX_ARGS);
            break;
        }
        node->args[node->nargs++] = s_or(p);
        if (!p->failed && !drv_ottl_lex_is(p, ")")) {
            drv_ottl_lex_expect(p, ",");
        }
    }
    drv_ottl_lex_expect(p, ")");
    if (!p->failed && (node->nargs < min_args || node->nargs > max_args)) {
        drv_ottl_lex_fail(p, offset, "%s takes %d argument%s, not %d", word, max_args, max_args == 1 ? "" : "s",
                          node->nargs);
    }
    return node;
}

//  [key] or [index], after a path or a call.
static bool s_index(parser_t *p, drv_ottl_node_t *node)
{
    while (!p->failed && drv_ottl_lex_is(p, "[")) {
        drv_ottl_lex_next(p);
        if (node->depth == DRV_OTTL_MAX_KEYS) {
            drv_ottl_lex_fail(p, p->start, "a path of more than %d keys", DRV_OTTL_MAX_KEYS);
            return false;
        }
        drv_ottl_key_t *key = &node->keys[node->depth];
        if (p->kind == T_STRING) {
            key->key = drv_ottl_lex_string(p, &key->len);
        } else if (p->kind == T_INT) {
            key->index = strtoll(p->text + p->start, NULL, 10);
        } else {
            drv_ottl_lex_fail(p, p->start, "a key in double quotes or an index expected");
            return false;
        }
        node->depth++;
        drv_ottl_lex_next(p);
        drv_ottl_lex_expect(p, "]");
    }
    return !p->failed;
}

//  A path: its words (with dots) mapped onto the record's keys.
static drv_ottl_node_t *s_path(parser_t *p, size_t offset)
{
    char words[200];
    size_t n = 0;
    for (;;) {
        if (n + p->len + 2 > sizeof words) {
            drv_ottl_lex_fail(p, offset, "%.40s...: no such path", p->text + offset);
            return NULL;
        }
        memcpy(words + n, p->text + p->start, p->len);
        n += p->len;
        drv_ottl_lex_next(p);
        if (!drv_ottl_lex_is(p, ".")) {
            break;
        }
        words[n++] = '.';
        drv_ottl_lex_next(p);
        if (p->kind != T_IDENT) {
            drv_ottl_lex_fail(p, p->start, "a name expected after '.'");
            return NULL;
        }
    }
    words[n] = 0;
    const char *name = !strncmp(words, "log.", 4) ? words + 4 : words; // the Collector's context prefix
    const char *key, *close = NULL;
    bool indexed;
    if (drv_ottl_path_find(name, &key, &indexed, &close) != 0) {
        drv_ottl_lex_fail(p, offset, "%s: no such path%s%s%s", words, close ? " (did you mean " : "",
                          close ? close : "", close ? "?)" : "");
        return NULL;
    }
    drv_ottl_node_t *node = s_node(p, DRV_OTTL_PATH, offset);
    if (node) {
        node->cache = !strcmp(key, "cache");
    }
    const char *dot = strchr(key, '.');
    for (int part = 0; node && part < (dot ? 2 : 1); part++) {
        const char *from = part ? dot + 1 : key;
        size_t len = part || !dot ? strlen(from) : (size_t)(dot - key);
        node->keys[node->depth].key = strndup(from, len);
        node->keys[node->depth++].len = len;
    }
    if (node && drv_ottl_lex_is(p, "[") && !indexed) {
        drv_ottl_lex_fail(p, p->start, "%s takes no [key]", name);
    }
    if (node) {
        s_index(p, node);
    }
    return node;
}

static drv_ottl_node_t *s_value(parser_t *p)
{
    size_t offset = p->start;
    if (++p->depth > DRV_OTTL_MAX_DEPTH) {
        drv_ottl_lex_fail(p, offset, "nested deeper than %d", DRV_OTTL_MAX_DEPTH);
        return NULL;
    }
    drv_ottl_node_t *node = NULL;
    if (drv_ottl_lex_is(p, "(")) {
        drv_ottl_lex_next(p);
        node = s_or(p);
        drv_ottl_lex_expect(p, ")");
    } else if (drv_ottl_lex_is(p, "[")) {
        node = s_node(p, DRV_OTTL_LIST, offset);
        drv_ottl_lex_next(p);
        while (node && !p->failed && !drv_ottl_lex_is(p, "]")) {
            if (node->nargs == DRV_OTTL_MAX_ARGS) {
                drv_ottl_lex_fail(p, p->start, "a list of more than %d items", DRV_OTTL_MAX_ARGS);
                break;
            }
            node->args[node->nargs++] = s_or(p);
            if (!p->failed && !drv_ottl_lex_is(p, "]")) {
                drv_ottl_lex_expect(p, ",");
            }
        }
        drv_ottl_lex_expect(p, "]");
    } else if (p->kind == T_STRING) {
        node = s_node(p, DRV_OTTL_STRING, offset);
        if (node) {
            node->string = drv_ottl_lex_string(p, &node->len);
        }
        drv_ottl_lex_next(p);
    } else if (p->kind == T_INT || p->kind == T_FLOAT) {
        node = s_node(p, p->kind == T_INT ? DRV_OTTL_INT : DRV_OTTL_FLOAT, offset);
        errno = 0;
        if (node && p->kind == T_INT) {
            node->integer = strtoll(p->text + p->start, NULL, 10);
        } else if (node) {
            node->number = strtod(p->text + p->start, NULL);
        }
        if (errno == ERANGE) {
            drv_ottl_lex_fail(p, offset, "%.*s: out of range", (int)p->len, p->text + p->start);
        }
        drv_ottl_lex_next(p);
    } else if (drv_ottl_lex_is(p, "true") || drv_ottl_lex_is(p, "false") || drv_ottl_lex_is(p, "nil")) {
        node = s_node(p, drv_ottl_lex_is(p, "nil") ? DRV_OTTL_NIL : DRV_OTTL_BOOL, offset);
        if (node) {
            node->boolean = drv_ottl_lex_is(p, "true");
        }
        drv_ottl_lex_next(p);
    } else if (p->kind == T_IDENT) {
        const char *name = p->text + p->start;
        size_t len = p->len;
        size_t save = p->at;
        drv_ottl_lex_next(p);
        bool call = drv_ottl_lex_is(p, "(");
        p->at = save, p->len = len, p->start = offset, p->kind = T_IDENT; // back to the name
        int64_t value = 0;
        bool is_enum = drv_ottl_enum_find(name, len, &value);
        if (call) {
            drv_ottl_lex_next(p);
            node = s_call(p, name, len, offset, false);
            if (node) {
                s_index(p, node);
            }
        } else if (is_enum) {
            node = s_node(p, DRV_OTTL_INT, offset);
            if (node) {
                node->integer = value;
            }
            drv_ottl_lex_next(p);
        } else {
            node = s_path(p, offset);
        }
    } else if (!p->failed) {
        drv_ottl_lex_fail(p, offset, "a value expected, found %s%.*s%s", p->kind == T_END ? "the end" : "'",
                          p->kind == T_END ? 0 : (int)p->len, p->text + p->start, p->kind == T_END ? "" : "'");
    }
    p->depth--;
    return node;
}

static drv_ottl_node_t *s_binary(parser_t *p, drv_ottl_kind_t kind, size_t offset, drv_ottl_node_t *left,
                                 drv_ottl_node_t *right)
{
    drv_ottl_node_t *node = s_node(p, kind, offset);
    if (!node) {
        drv_ottl_free(left, NULL);
        drv_ottl_free(right, NULL);
        return NULL;
    }
    node->args[0] = left;
    node->args[1] = right;
    node->nargs = 2;
    return node;
}

static drv_ottl_node_t *s_comparison(parser_t *p)
{
    size_t offset = p->start;
    drv_ottl_node_t *left = s_value(p);
    if (p->failed || p->kind != T_OP) {
        return left;
    }
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    drv_ottl_op_t op = DRV_OTTL_EQ;
    for (int i = 0; i < 6; i++) {
        if (drv_ottl_lex_is(p, ops[i])) {
            op = (drv_ottl_op_t)i;
        }
    }
    drv_ottl_lex_next(p);
    drv_ottl_node_t *node = s_binary(p, DRV_OTTL_CMP, offset, left, s_value(p));
    if (node) {
        node->op = op;
    }
    return node;
}

static drv_ottl_node_t *s_not(parser_t *p)
{
    if (!drv_ottl_lex_is(p, "not")) {
        return s_comparison(p);
    }
    size_t offset = p->start;
    if (++p->depth > DRV_OTTL_MAX_DEPTH) {
        drv_ottl_lex_fail(p, offset, "nested deeper than %d", DRV_OTTL_MAX_DEPTH);
        return NULL;
    }
    drv_ottl_lex_next(p);
    drv_ottl_node_t *node = s_node(p, DRV_OTTL_NOT, offset);
    if (node) {
        node->args[0] = s_not(p);
        node->nargs = 1;
    }
    p->depth--;
    return node;
}

static drv_ottl_node_t *s_and(parser_t *p)
{
    size_t offset = p->start;
    drv_ottl_node_t *node = s_not(p);
    while (!p->failed && drv_ottl_lex_is(p, "and")) {
        drv_ottl_lex_next(p);
        node = s_binary(p, DRV_OTTL_AND, offset, node, s_not(p));
    }
    return node;
}

static drv_ottl_node_t *s_or(parser_t *p)
{
    size_t offset = p->start;
    drv_ottl_node_t *node = s_and(p);
    while (!p->failed && drv_ottl_lex_is(p, "or")) {
        drv_ottl_lex_next(p);
        node = s_binary(p, DRV_OTTL_OR, offset, node, s_and(p));
    }
    return node;
}

int drv_ottl_parse_condition(const char *text, drv_ottl_node_t **out, char *err, size_t errlen)
{
    parser_t p = {.text = text, .err = err, .errlen = errlen};
    *out = NULL;
    drv_ottl_lex_next(&p);
    drv_ottl_node_t *node = p.failed ? NULL : s_or(&p);
    if (!p.failed && p.kind != T_END) {
        drv_ottl_lex_fail(&p, p.start, "'%.*s': and, or, or the end expected", (int)p.len, p.text + p.start);
    }
    if (!p.failed && node &&
        (node->kind == DRV_OTTL_STRING || node->kind == DRV_OTTL_INT || node->kind == DRV_OTTL_FLOAT ||
         node->kind == DRV_OTTL_LIST || node->kind == DRV_OTTL_NIL)) {
        drv_ottl_lex_fail(&p, node->offset,
                          "a condition must be true or false: compare it (==, <, ...) or call IsMatch...");
    }
    if (p.failed) {
        drv_ottl_free(node, NULL);
        return -1;
    }
    *out = node;
    return 0;
}

int drv_ottl_parse_statement(const char *text, drv_ottl_node_t **out, char *err, size_t errlen)
{
    parser_t p = {.text = text, .err = err, .errlen = errlen};
    *out = NULL;
    drv_ottl_lex_next(&p);
    size_t offset = p.start;
    const char *name = p.text + p.start;
    size_t len = p.len;
    if (!p.failed && p.kind != T_IDENT) {
        drv_ottl_lex_fail(&p, offset, "a statement begins with an editor (set, delete_key, ...)");
    }
    if (!p.failed) {
        drv_ottl_lex_next(&p);
    }
    if (!p.failed && !drv_ottl_lex_is(&p, "(")) {
        drv_ottl_lex_fail(&p, p.start, "'(' expected after the editor's name");
    }
    drv_ottl_node_t *node = p.failed ? NULL : s_call(&p, name, len, offset, true);
    if (node && !p.failed) {
        node->kind = DRV_OTTL_EDITOR;
        if (node->args[0]->kind != DRV_OTTL_PATH) {
            drv_ottl_lex_fail(&p, node->args[0]->offset, "%s's target must be a path (attributes[\"k\"], body, ...)",
                              drv_ottl_function_name(node->function));
        }
        for (int k = 0; k < node->args[0]->depth && !p.failed; k++) {
            if (!node->args[0]->keys[k].key) {
                drv_ottl_lex_fail(&p, node->args[0]->offset, "a target through a list's [index] is not taken");
            }
        }
    }
    if (!p.failed && drv_ottl_lex_is(&p, "where")) {
        drv_ottl_lex_next(&p);
        node->where = s_or(&p);
    }
    if (!p.failed && p.kind != T_END) {
        drv_ottl_lex_fail(&p, p.start, "'%.*s': where or the end expected", (int)p.len, p.text + p.start);
    }
    if (p.failed) {
        drv_ottl_free(node, NULL);
        return -1;
    }
    *out = node;
    return 0;
}

void drv_ottl_free(drv_ottl_node_t *node, void (*free_compiled)(void *compiled))
{
    if (!node) {
        return;
    }
    drv_ottl_free(node->where, free_compiled);
    for (int i = 0; i < node->nargs; i++) {
        drv_ottl_free(node->args[i], free_compiled);
    }
    for (int i = 0; i < node->depth; i++) {
        free(node->keys[i].key);
    }
    if (node->compiled && free_compiled) {
        free_compiled(node->compiled);
    }
    free(node->string);
    free(node);
}
