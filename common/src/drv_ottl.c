/*  drv_ottl — see drover/drv_ottl.h: the grammar (drv_ottl_names.c: the
    names it knows). A recursive-descent parser over a
    small lexer; every node remembers its byte offset for the errors. */
#include "drover/drv_ottl.h"
#include "drv_ottl_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_END, T_IDENT, T_STRING, T_INT, T_FLOAT, T_PUNCT, T_OP, T_BAD } token_kind_t;

typedef struct {
    const char *text;
    size_t at; // the lexer's place
    token_kind_t kind;
    size_t start, len; // the token at hand
    char *err;
    size_t errlen;
    bool failed;
    int depth;
} parser_t;

static void s_fail(parser_t *p, size_t at, const char *fmt, ...)
{
    if (p->failed) {
        return;
    }
    p->failed = true;
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "at offset %zu: %s", at, what);
}

//  The next token into p->kind, start, len.
static void s_next(parser_t *p)
{
    const char *t = p->text;
    while (t[p->at] == ' ' || t[p->at] == '\t' || t[p->at] == '\n' || t[p->at] == '\r') {
        p->at++;
    }
    p->start = p->at;
    char c = t[p->at];
    if (!c) {
        p->kind = T_END, p->len = 0;
    } else if (isalpha((unsigned char)c) || c == '_') {
        while (isalnum((unsigned char)t[p->at]) || t[p->at] == '_') {
            p->at++;
        }
        p->kind = T_IDENT;
    } else if (isdigit((unsigned char)c) || (c == '-' && isdigit((unsigned char)t[p->at + 1]))) {
        p->at++;
        bool dot = false;
        while (isdigit((unsigned char)t[p->at]) || (t[p->at] == '.' && !dot)) {
            dot |= t[p->at++] == '.';
        }
        p->kind = dot ? T_FLOAT : T_INT;
    } else if (c == '"') {
        p->at++;
        while (t[p->at] && t[p->at] != '"') {
            p->at += t[p->at] == '\\' && t[p->at + 1] ? 2 : 1;
        }
        if (!t[p->at]) {
            s_fail(p, p->start, "a string that does not end (a \" is missing)");
            p->kind = T_BAD;
            return;
        }
        p->at++;
        p->kind = T_STRING;
    } else if (strchr("=!<>", c)) {
        p->at += t[p->at + 1] == '=' ? 2 : 1;
        p->kind = T_OP;
        if (p->at - p->start == 1 && (c == '=' || c == '!')) {
            s_fail(p, p->start, "'%c': did you mean '%c='?", c, c);
            p->kind = T_BAD;
        }
    } else if (strchr("()[],.", c)) {
        p->at++;
        p->kind = T_PUNCT;
    } else {
        s_fail(p, p->start, "'%c' is not OTTL", c);
        p->kind = T_BAD;
    }
    p->len = p->at - p->start;
}

static bool s_is(const parser_t *p, const char *token)
{
    return (p->kind == T_PUNCT || p->kind == T_OP || p->kind == T_IDENT) && p->len == strlen(token) &&
           !memcmp(p->text + p->start, token, p->len);
}

static bool s_expect(parser_t *p, const char *token)
{
    if (!s_is(p, token)) {
        s_fail(p, p->start, "'%s' expected, found %s%.*s%s", token, p->kind == T_END ? "the end" : "'",
               p->kind == T_END ? 0 : (int)p->len, p->text + p->start, p->kind == T_END ? "" : "'");
        return false;
    }
    s_next(p);
    return true;
}

static drv_ottl_node_t *s_node(parser_t *p, drv_ottl_kind_t kind, size_t offset)
{
    drv_ottl_node_t *node = calloc(1, sizeof *node);
    if (!node) {
        s_fail(p, offset, "out of memory");
        return NULL;
    }
    node->kind = kind;
    node->offset = offset;
    return node;
}

//  A string token's text, unescaped, malloc'd (*len bytes).
static char *s_unescape(parser_t *p, size_t *len)
{
    const char *t = p->text + p->start + 1;
    size_t n = p->len - 2;
    char *out = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; out && i < n; i++) {
        char c = t[i];
        if (c == '\\' && i + 1 < n) {
            c = t[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        out[k++] = c;
    }
    if (!out) {
        s_fail(p, p->start, "out of memory");
        return NULL;
    }
    out[k] = 0;
    *len = k;
    return out;
}

static drv_ottl_node_t *s_or(parser_t *p);

//  name(args): a converter.
static drv_ottl_node_t *s_call(parser_t *p, const char *name, size_t namelen, size_t offset)
{
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)namelen, name);
    drv_ottl_function_t function;
    int min_args, max_args;
    const char *close = NULL;
    if (drv_ottl_function_find(word, &function, &min_args, &max_args, &close) != 0) {
        s_fail(p, offset, "%s: no such converter%s%s%s", word, close ? " (did you mean " : "", close ? close : "",
               close ? "?)" : "");
        return NULL;
    }
    drv_ottl_node_t *node = s_node(p, DRV_OTTL_CALL, offset);
    if (!node) {
        return NULL;
    }
    node->function = function;
    s_next(p); // (
    while (!p->failed && !s_is(p, ")")) {
        if (node->nargs == DRV_OTTL_MAX_ARGS) {
            s_fail(p, p->start, "more than %d arguments", DRV_OTTL_MAX_ARGS);
            break;
        }
        node->args[node->nargs++] = s_or(p);
        if (!p->failed && !s_is(p, ")")) {
            s_expect(p, ",");
        }
    }
    s_expect(p, ")");
    if (!p->failed && (node->nargs < min_args || node->nargs > max_args)) {
        s_fail(p, offset, "%s takes %d argument%s, not %d", word, max_args, max_args == 1 ? "" : "s", node->nargs);
    }
    return node;
}

//  [key] or [index], after a path or a call.
static bool s_index(parser_t *p, drv_ottl_node_t *node)
{
    while (!p->failed && s_is(p, "[")) {
        s_next(p);
        if (node->depth == DRV_OTTL_MAX_KEYS) {
            s_fail(p, p->start, "a path of more than %d keys", DRV_OTTL_MAX_KEYS);
            return false;
        }
        drv_ottl_key_t *key = &node->keys[node->depth];
        if (p->kind == T_STRING) {
            key->key = s_unescape(p, &key->len);
        } else if (p->kind == T_INT) {
            key->index = strtoll(p->text + p->start, NULL, 10);
        } else {
            s_fail(p, p->start, "a key in double quotes or an index expected");
            return false;
        }
        node->depth++;
        s_next(p);
        s_expect(p, "]");
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
            s_fail(p, offset, "%.40s...: no such path", p->text + offset);
            return NULL;
        }
        memcpy(words + n, p->text + p->start, p->len);
        n += p->len;
        s_next(p);
        if (!s_is(p, ".")) {
            break;
        }
        words[n++] = '.';
        s_next(p);
        if (p->kind != T_IDENT) {
            s_fail(p, p->start, "a name expected after '.'");
            return NULL;
        }
    }
    words[n] = 0;
    const char *name = !strncmp(words, "log.", 4) ? words + 4 : words; // the Collector's context prefix
    const char *key, *close = NULL;
    bool indexed;
    if (drv_ottl_path_find(name, &key, &indexed, &close) != 0) {
        s_fail(p, offset, "%s: no such path%s%s%s", words, close ? " (did you mean " : "", close ? close : "",
               close ? "?)" : "");
        return NULL;
    }
    drv_ottl_node_t *node = s_node(p, DRV_OTTL_PATH, offset);
    const char *dot = strchr(key, '.');
    for (int part = 0; node && part < (dot ? 2 : 1); part++) {
        const char *from = part ? dot + 1 : key;
        size_t len = part || !dot ? strlen(from) : (size_t)(dot - key);
        node->keys[node->depth].key = strndup(from, len);
        node->keys[node->depth++].len = len;
    }
    if (node && s_is(p, "[") && !indexed) {
        s_fail(p, p->start, "%s takes no [key]", name);
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
        s_fail(p, offset, "nested deeper than %d", DRV_OTTL_MAX_DEPTH);
        return NULL;
    }
    drv_ottl_node_t *node = NULL;
    if (s_is(p, "(")) {
        s_next(p);
        node = s_or(p);
        s_expect(p, ")");
    } else if (s_is(p, "[")) {
        node = s_node(p, DRV_OTTL_LIST, offset);
        s_next(p);
        while (node && !p->failed && !s_is(p, "]")) {
            if (node->nargs == DRV_OTTL_MAX_ARGS) {
                s_fail(p, p->start, "a list of more than %d items", DRV_OTTL_MAX_ARGS);
                break;
            }
            node->args[node->nargs++] = s_or(p);
            if (!p->failed && !s_is(p, "]")) {
                s_expect(p, ",");
            }
        }
        s_expect(p, "]");
    } else if (p->kind == T_STRING) {
        node = s_node(p, DRV_OTTL_STRING, offset);
        if (node) {
            node->string = s_unescape(p, &node->len);
        }
        s_next(p);
    } else if (p->kind == T_INT || p->kind == T_FLOAT) {
        node = s_node(p, p->kind == T_INT ? DRV_OTTL_INT : DRV_OTTL_FLOAT, offset);
        errno = 0;
        if (node && p->kind == T_INT) {
            node->integer = strtoll(p->text + p->start, NULL, 10);
        } else if (node) {
            node->number = strtod(p->text + p->start, NULL);
        }
        if (errno == ERANGE) {
            s_fail(p, offset, "%.*s: out of range", (int)p->len, p->text + p->start);
        }
        s_next(p);
    } else if (s_is(p, "true") || s_is(p, "false") || s_is(p, "nil")) {
        node = s_node(p, s_is(p, "nil") ? DRV_OTTL_NIL : DRV_OTTL_BOOL, offset);
        if (node) {
            node->boolean = s_is(p, "true");
        }
        s_next(p);
    } else if (p->kind == T_IDENT) {
        const char *name = p->text + p->start;
        size_t len = p->len;
        size_t save = p->at;
        s_next(p);
        bool call = s_is(p, "(");
        p->at = save, p->len = len, p->start = offset, p->kind = T_IDENT; // back to the name
        int64_t value = 0;
        bool is_enum = drv_ottl_enum_find(name, len, &value);
        if (call) {
            s_next(p);
            node = s_call(p, name, len, offset);
            if (node) {
                s_index(p, node);
            }
        } else if (is_enum) {
            node = s_node(p, DRV_OTTL_INT, offset);
            if (node) {
                node->integer = value;
            }
            s_next(p);
        } else {
            node = s_path(p, offset);
        }
    } else if (!p->failed) {
        s_fail(p, offset, "a value expected, found %s%.*s%s", p->kind == T_END ? "the end" : "'",
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
        if (s_is(p, ops[i])) {
            op = (drv_ottl_op_t)i;
        }
    }
    s_next(p);
    drv_ottl_node_t *node = s_binary(p, DRV_OTTL_CMP, offset, left, s_value(p));
    if (node) {
        node->op = op;
    }
    return node;
}

static drv_ottl_node_t *s_not(parser_t *p)
{
    if (!s_is(p, "not")) {
        return s_comparison(p);
    }
    size_t offset = p->start;
    if (++p->depth > DRV_OTTL_MAX_DEPTH) {
        s_fail(p, offset, "nested deeper than %d", DRV_OTTL_MAX_DEPTH);
        return NULL;
    }
    s_next(p);
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
    while (!p->failed && s_is(p, "and")) {
        s_next(p);
        node = s_binary(p, DRV_OTTL_AND, offset, node, s_not(p));
    }
    return node;
}

static drv_ottl_node_t *s_or(parser_t *p)
{
    size_t offset = p->start;
    drv_ottl_node_t *node = s_and(p);
    while (!p->failed && s_is(p, "or")) {
        s_next(p);
        node = s_binary(p, DRV_OTTL_OR, offset, node, s_and(p));
    }
    return node;
}

int drv_ottl_parse_condition(const char *text, drv_ottl_node_t **out, char *err, size_t errlen)
{
    parser_t p = {.text = text, .err = err, .errlen = errlen};
    *out = NULL;
    s_next(&p);
    drv_ottl_node_t *node = p.failed ? NULL : s_or(&p);
    if (!p.failed && p.kind != T_END) {
        s_fail(&p, p.start, "'%.*s': and, or, or the end expected", (int)p.len, p.text + p.start);
    }
    if (!p.failed && node &&
        (node->kind == DRV_OTTL_STRING || node->kind == DRV_OTTL_INT || node->kind == DRV_OTTL_FLOAT ||
         node->kind == DRV_OTTL_LIST || node->kind == DRV_OTTL_NIL)) {
        s_fail(&p, node->offset, "a condition must be true or false: compare it (==, <, ...) or call IsMatch...");
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
