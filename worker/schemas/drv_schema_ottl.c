/*  OTTL conditions in a spec (docs/ottl.md): each parsed by
    drover/drv_ottl.h and its IsMatch patterns compiled with PCRE2, so that
    a spec is refused at validation for what an instance could not run;
    worker/kit/drv_ottl_eval.c evaluates the same trees. */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

const char drv_ottl_reference[] =
    "**OTTL** (docs/ottl.md), as the Collector's transform, filter and routing processors write it for"
    " logs.\n"
    "\n"
    "Statements: `EDITOR(target, ...) [where CONDITION]`. Editors:\n"
    "\n"
    "| editor | does |\n"
    "| --- | --- |\n"
    "| `set(target, value)` | target becomes value (nothing when value is nil) |\n"
    "| `delete_key(map, \"key\")` | the key goes |\n"
    "| `delete_matching_keys(map, \"pattern\")` | the keys the pattern matches go |\n"
    "| `keep_keys(map, [\"k1\", ...])` | only those keys stay |\n"
    "| `keep_matching_keys(map, \"pattern\")` | only the keys the pattern matches stay |\n"
    "| `truncate_all(map, limit)` | string values cut to limit bytes |\n"
    "| `replace_pattern(target, \"pattern\", \"replacement\")` | every match in the string replaced ($1,"
    " ${name}) |\n"
    "| `replace_all_patterns(map, \"value\" or \"key\", \"pattern\", \"replacement\")` | the same in"
    " every value (or key) |\n"
    "| `merge_maps(target, source, \"insert\" or \"update\" or \"upsert\")` | source's keys into target |\n"
    "| `limit(map, limit, [\"priority\", ...])` | at most limit entries, the priority keys' first |\n"
    "| `flatten(map, \"prefix\", depth)` | nested maps and lists as keys joined with dots (prefix, depth optional) |\n"
    "\n"
    "Conditions: `or`, `and`, `not`, `( )`, `== != < <= > >=`; values: strings (`\"...\"`, escapes"
    " `\\\" \\\\ \\n \\r \\t`), numbers, `true`, `false`, `nil`, `[lists]`, enums"
    " (`SEVERITY_NUMBER_INFO`, `SPAN_KIND_SERVER`, ...), paths and converters.\n"
    "\n"
    "Converters: `IsMatch(target, \"pattern\")`, `IsString`, `IsMap`, `IsList`, `IsInt`, `IsDouble`,"
    " `IsBool`, `Len`, `Int`, `Double`, `String`, `ToLowerCase`, `ToUpperCase`, `Concat([values],"
    " \"delimiter\")`, `Substring(s, start, length)`, `HasPrefix(s, \"p\")`, `HasSuffix(s, \"p\")`,"
    " `ParseJSON(s)`, `ParseKeyValue(s, \"=\", \" \")`, `ExtractPatterns(s, \"(?P<name>...)\")`,"
    " `Split(s, \"delimiter\")`, `SHA256(v)`, `Now()` (nanoseconds since the epoch).\n"
    "\n"
    "Paths (`log.` may lead): `body`, `attributes[\"k\"]`, `resource.attributes[\"k\"]`,"
    " `instrumentation_scope.name` / `.version` / `.attributes[\"k\"]` (or `scope.`), `severity_number`,"
    " `severity_text`, `time_unix_nano`, `observed_time_unix_nano`, `trace_id`, `span_id`, `flags`,"
    " `event_name`, `cache[\"k\"]` (the statements' scratch map); a span's or data point's `name`, `kind`, "
    "`start_time_unix_nano`,"
    " `end_time_unix_nano`, `unit`, `type`, `value`; maps and lists indexed deeper (`[\"k\"]`, `[0]`).\n"
    "\n"
    "Patterns are PCRE2 (compiled once, under processor:parse's match limits). `error_mode`: propagate"
    " (the record counted in errors, handed on as it came), ignore (skipped, counted), silent.\n"
    "\n"
    "Coming from the Collector: statements and conditions for logs read the same; a span or a data point is a"
    " record of its own (no resource or scope context: a condition on the resource is tested on each of its"
    " records); patterns are PCRE2, which reads RE2's syntax the same but for a few corners; `Now()` is nanoseconds,"
    " not a time; `ParseKeyValue` does not split inside quotes; `time`, `flatten`'s resolveConflicts and the"
    " converters not listed are refused by name. docs/ottl.md says more.\n";

static void s_free_compiled(void *compiled)
{
    pcre2_code_free(compiled);
}

//  Which argument of a call is a regex (IsMatch's, the *_matching_keys
//  and replace_* editors'), or -1.
static int s_pattern_arg(const drv_ottl_node_t *node)
{
    if (node->kind != DRV_OTTL_CALL && node->kind != DRV_OTTL_EDITOR) {
        return -1;
    }
    switch (node->function) {
    case DRV_OTTL_IS_MATCH:
    case DRV_OTTL_EXTRACT_PATTERNS:
    case DRV_OTTL_DELETE_MATCHING_KEYS:
    case DRV_OTTL_KEEP_MATCHING_KEYS:
    case DRV_OTTL_REPLACE_PATTERN:
        return 1;
    case DRV_OTTL_REPLACE_ALL_PATTERNS:
        return 2;
    default:
        return -1;
    }
}

//  The patterns compiled (JIT when it can), each into its call's
//  compiled: 0, or -1 with err.
static int s_compile(drv_ottl_node_t *node, char *err, size_t errlen)
{
    for (int i = 0; i < node->nargs; i++) {
        if (s_compile(node->args[i], err, errlen) != 0) {
            return -1;
        }
    }
    if (node->where && s_compile(node->where, err, errlen) != 0) {
        return -1;
    }
    int arg = s_pattern_arg(node);
    if (arg < 0) {
        return 0;
    }
    const char *name = drv_ottl_function_name(node->function);
    const drv_ottl_node_t *pattern = node->args[arg];
    if (pattern->kind != DRV_OTTL_STRING) {
        snprintf(err, errlen, "at offset %zu: %s's pattern must be a string in double quotes", pattern->offset, name);
        return -1;
    }
    int code;
    PCRE2_SIZE at;
    node->compiled =
        pcre2_compile((PCRE2_SPTR)pattern->string, pattern->len, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
    if (!node->compiled) {
        PCRE2_UCHAR message[200];
        pcre2_get_error_message(code, message, sizeof message);
        snprintf(err, errlen, "at offset %zu: %s's pattern, at its byte %zu: %s", pattern->offset, name, (size_t)at,
                 (char *)message);
        return -1;
    }
    pcre2_jit_compile(node->compiled, PCRE2_JIT_COMPLETE); // the interpreter when the JIT declines
    return 0;
}

int drv_ottl_compile(const char *text, bool statement, drv_ottl_node_t **out, char *err, size_t errlen)
{
    if ((statement ? drv_ottl_parse_statement : drv_ottl_parse_condition)(text, out, err, errlen) != 0) {
        return -1;
    }
    if (s_compile(*out, err, errlen) != 0) {
        drv_ottl_release(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

void drv_ottl_release(drv_ottl_node_t *tree)
{
    drv_ottl_free(tree, s_free_compiled);
}

int drv_ottl_check(drv_spec_check_t *check, const char *node_path, const char *path, const json_t *conditions,
                   bool statements)
{
    char where[300];
    snprintf(where, sizeof where, "%s.%s", node_path, path);
    if (json_is_string(conditions)) {
        drv_ottl_node_t *tree;
        char why[400];
        if (drv_ottl_compile(json_string_value(conditions), statements, &tree, why, sizeof why) != 0) {
            drv_spec_check_problem(check, where, "%s", why);
            return -1;
        }
        drv_ottl_release(tree);
        return 0;
    }
    if (!json_is_array(conditions) || json_array_size(conditions) == 0) {
        drv_spec_check_problem(check, where, "must be a list of OTTL %s (strings)",
                               statements ? "statements" : "conditions");
        return -1;
    }
    size_t i;
    json_t *condition;
    int rc = 0;
    json_array_foreach(conditions, i, condition)
    {
        char item[340];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (!json_is_string(condition)) {
            snprintf(where, sizeof where, "%s.%s", node_path, item);
            drv_spec_check_problem(check, where, "must be an OTTL %s in a string",
                                   statements ? "statement" : "condition");
            rc = -1;
        } else {
            rc |= drv_ottl_check(check, node_path, item, condition, statements);
        }
    }
    return rc;
}
