/*  drv_ottl_lex — OTTL's tokens (docs/ottl.md): names, strings in double
    quotes and their escapes, numbers, operators, punctuation; and the
    parser's first failure, with its byte offset. */
#include "drv_ottl_internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void drv_ottl_lex_fail(parser_t *p, size_t at, const char *fmt, ...)
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
void drv_ottl_lex_next(parser_t *p)
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
            drv_ottl_lex_fail(p, p->start, "a string that does not end (a \" is missing)");
            p->kind = T_BAD;
            return;
        }
        p->at++;
        p->kind = T_STRING;
    } else if (strchr("=!<>", c)) {
        p->at += t[p->at + 1] == '=' ? 2 : 1;
        p->kind = T_OP;
        if (p->at - p->start == 1 && (c == '=' || c == '!')) {
            drv_ottl_lex_fail(p, p->start, "'%c': did you mean '%c='?", c, c);
            p->kind = T_BAD;
        }
    } else if (strchr("()[],.", c)) {
        p->at++;
        p->kind = T_PUNCT;
    } else {
        drv_ottl_lex_fail(p, p->start, "'%c' is not OTTL", c);
        p->kind = T_BAD;
    }
    p->len = p->at - p->start;
}

bool drv_ottl_lex_is(const parser_t *p, const char *token)
{
    return (p->kind == T_PUNCT || p->kind == T_OP || p->kind == T_IDENT) && p->len == strlen(token) &&
           !memcmp(p->text + p->start, token, p->len);
}

bool drv_ottl_lex_expect(parser_t *p, const char *token)
{
    if (!drv_ottl_lex_is(p, token)) {
        drv_ottl_lex_fail(p, p->start, "'%s' expected, found %s%.*s%s", token, p->kind == T_END ? "the end" : "'",
                          p->kind == T_END ? 0 : (int)p->len, p->text + p->start, p->kind == T_END ? "" : "'");
        return false;
    }
    drv_ottl_lex_next(p);
    return true;
}

//  A string token's text, unescaped, malloc'd (*len bytes).
char *drv_ottl_lex_string(parser_t *p, size_t *len)
{
    const char *t = p->text + p->start + 1;
    size_t n = p->len - 2;
    char *out = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; out && i < n; i++) {
        char c = t[i];
        if (c == '\\' && i + 1 < n) {
            c = t[++i];
            if (!strchr("nrt\\\"", c)) {
                drv_ottl_lex_fail(p, p->start + 1 + i - 1, "\\%c is not an escape (a pattern's \\%c is written \\\\%c)",
                                  c, c, c);
                free(out);
                return NULL;
            }
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        out[k++] = c;
    }
    if (!out) {
        drv_ottl_lex_fail(p, p->start, "out of memory");
        return NULL;
    }
    out[k] = 0;
    *len = k;
    return out;
}
