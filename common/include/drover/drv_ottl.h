/*  drv_ottl — the OpenTelemetry Transformation Language as the Collector's
    filter and routing processors write conditions (docs/ottl.md), parsed
    into a tree: droverd and droverctl check a spec's conditions with it,
    an instance evaluates the tree on each record (worker/kit/drv_ottl_eval.c).

    A condition is `or`, `and`, `not`, parentheses and comparisons
    (== != < <= > >=) of values: literals (strings in double quotes with
    \" \\ \n \t escapes, integers, floats, true, false, nil), enums
    (SEVERITY_NUMBER_INFO...), paths into the record and converter calls
    (IsMatch(body, "x"), Len(attributes["k"])...), a value alone where it is
    a boolean. Paths are the log context's (docs/ottl.md, "Paths"), with or
    without the `log.` prefix the Collector now writes; they become the keys
    of drover's records (resource.attributes["k"] is resource["k"]). */
#ifndef DRV_OTTL_H
#define DRV_OTTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_OTTL_MAX_DEPTH 32 // nested expressions at most
#define DRV_OTTL_MAX_KEYS 8   // a path's keys at most
#define DRV_OTTL_MAX_ARGS 64  // a call's arguments, a list's items at most (keep_keys of many keys)

typedef enum {
    DRV_OTTL_NIL,
    DRV_OTTL_BOOL,
    DRV_OTTL_INT,
    DRV_OTTL_FLOAT,
    DRV_OTTL_STRING,
    DRV_OTTL_LIST, // [a, b, ...]: args
    DRV_OTTL_PATH, // keys (strings) / indexes (ints)
    DRV_OTTL_CALL, // name(args)
    DRV_OTTL_NOT,  // args[0]
    DRV_OTTL_AND,  // args[0] and args[1]
    DRV_OTTL_OR,
    DRV_OTTL_CMP,    // args[0] op args[1]
    DRV_OTTL_EDITOR, // a statement: name(args) [where]
} drv_ottl_kind_t;

typedef enum { DRV_OTTL_EQ, DRV_OTTL_NE, DRV_OTTL_LT, DRV_OTTL_LE, DRV_OTTL_GT, DRV_OTTL_GE } drv_ottl_op_t;

typedef enum {
    DRV_OTTL_IS_MATCH,
    DRV_OTTL_IS_STRING,
    DRV_OTTL_IS_MAP,
    DRV_OTTL_IS_LIST,
    DRV_OTTL_IS_INT,
    DRV_OTTL_IS_DOUBLE,
    DRV_OTTL_IS_BOOL,
    DRV_OTTL_LEN,
    DRV_OTTL_INT_OF,
    DRV_OTTL_DOUBLE_OF,
    DRV_OTTL_STRING_OF,
    DRV_OTTL_TO_LOWER,
    DRV_OTTL_TO_UPPER,
    DRV_OTTL_CONCAT,
    DRV_OTTL_SUBSTRING,
    DRV_OTTL_HAS_PREFIX,
    DRV_OTTL_HAS_SUFFIX,
    DRV_OTTL_PARSE_JSON,
    DRV_OTTL_PARSE_KEY_VALUE,
    DRV_OTTL_EXTRACT_PATTERNS,
    DRV_OTTL_SPLIT,
    DRV_OTTL_SHA256,
    DRV_OTTL_NOW,
    //  Editors: what a statement does.
    DRV_OTTL_SET,
    DRV_OTTL_DELETE_KEY,
    DRV_OTTL_DELETE_MATCHING_KEYS,
    DRV_OTTL_KEEP_KEYS,
    DRV_OTTL_KEEP_MATCHING_KEYS,
    DRV_OTTL_TRUNCATE_ALL,
    DRV_OTTL_REPLACE_PATTERN,
    DRV_OTTL_REPLACE_ALL_PATTERNS,
    DRV_OTTL_MERGE_MAPS,
    DRV_OTTL_LIMIT,
    DRV_OTTL_FLATTEN,
    DRV_OTTL_FUNCTIONS
} drv_ottl_function_t;

typedef struct {
    char *key; // a map's key (malloc'd), or NULL for a list's index
    size_t len;
    int64_t index;
} drv_ottl_key_t;

typedef struct drv_ottl_node_t {
    drv_ottl_kind_t kind;
    size_t offset; // where it begins in the text
    bool boolean;
    int64_t integer;
    double number;
    char *string; // a string literal (malloc'd, unescaped)
    size_t len;
    drv_ottl_key_t keys[DRV_OTTL_MAX_KEYS]; // a path's, from the record's top
    int depth;
    bool cache; // a path into cache[...]: keys[0] is "cache", the rest into the statements' scratch map
    drv_ottl_function_t function; // a call's
    drv_ottl_op_t op;             // a comparison's
    struct drv_ottl_node_t *args[DRV_OTTL_MAX_ARGS];
    int nargs;
    struct drv_ottl_node_t *where; // a statement's condition, or NULL
    void *compiled;                // the evaluator's (a call's regex), freed by its free hook
} drv_ottl_node_t;

//  A condition's tree: 0, or -1 with what is wrong, at which byte, and a
//  did-you-mean for a path's or a function's name in err.
int drv_ottl_parse_condition(const char *text, drv_ottl_node_t **out, char *err, size_t errlen);
//  A statement's tree (an editor call and its where): the same.
int drv_ottl_parse_statement(const char *text, drv_ottl_node_t **out, char *err, size_t errlen);
//  Frees a tree (free_compiled: the evaluator's, for each node that has one; NULL: none).
void drv_ottl_free(drv_ottl_node_t *node, void (*free_compiled)(void *compiled));
//  A function's name as OTTL writes it ("IsMatch").
const char *drv_ottl_function_name(drv_ottl_function_t function);

#endif
