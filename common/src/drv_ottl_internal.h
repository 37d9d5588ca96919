/*  drv_ottl's parts (common/src): the grammar (drv_ottl.c) reads the
    tokens of drv_ottl_lex.c and asks the names (drv_ottl_names.c) what a
    word is. */
#ifndef DRV_OTTL_INTERNAL_H
#define DRV_OTTL_INTERNAL_H

#include "drover/drv_ottl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

//  The next token into p->kind, start, len (T_BAD, and the failure said, for what is no token).
void drv_ottl_lex_next(parser_t *p);
//  Whether the token at hand is token (a name, an operator, punctuation).
bool drv_ottl_lex_is(const parser_t *p, const char *token);
//  The token at hand is token: skipped (true), or the failure said.
bool drv_ottl_lex_expect(parser_t *p, const char *token);
//  The parse fails at byte at: the first failure is kept in p->err.
void drv_ottl_lex_fail(parser_t *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
//  The string token's text unescaped, malloc'd (*len bytes); NULL when an escape is not one (said).
char *drv_ottl_lex_string(parser_t *p, size_t *len);

//  A converter by name: 0 with what it is and takes, or -1 with the closest name (or NULL) in *close.
int drv_ottl_function_find(const char *name, drv_ottl_function_t *function, int *min_args, int *max_args,
                           const char **close);
//  A path by its words ("resource.attributes"): 0 with the record's key
//  ("resource"; "scope.name" for two) and whether it takes [keys], or -1
//  with the closest path (or NULL) in *close.
int drv_ottl_path_find(const char *name, const char **key, bool *indexed, const char **close);
//  An enum's value (SEVERITY_NUMBER_WARN: 13): true when name (len bytes) is one.
bool drv_ottl_enum_find(const char *name, size_t len, int64_t *value);

#endif
