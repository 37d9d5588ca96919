/*  drv_ottl_names — what OTTL's names mean here (docs/ottl.md): the
    converters and their arguments, the log context's paths and the
    record's keys they lead to, the enums; each found by name, or the
    closest one offered. */
#include "drv_ottl_internal.h"

#include "drover/drv_suggest.h"

#include <string.h>

static const struct {
    const char *name;
    drv_ottl_function_t function;
    int min_args, max_args;
} s_functions[] = {
    {"IsMatch", DRV_OTTL_IS_MATCH, 2, 2},
    {"IsString", DRV_OTTL_IS_STRING, 1, 1},
    {"IsMap", DRV_OTTL_IS_MAP, 1, 1},
    {"IsList", DRV_OTTL_IS_LIST, 1, 1},
    {"IsInt", DRV_OTTL_IS_INT, 1, 1},
    {"IsDouble", DRV_OTTL_IS_DOUBLE, 1, 1},
    {"IsBool", DRV_OTTL_IS_BOOL, 1, 1},
    {"Len", DRV_OTTL_LEN, 1, 1},
    {"Int", DRV_OTTL_INT_OF, 1, 1},
    {"Double", DRV_OTTL_DOUBLE_OF, 1, 1},
    {"String", DRV_OTTL_STRING_OF, 1, 1},
    {"ToLowerCase", DRV_OTTL_TO_LOWER, 1, 1},
    {"ToUpperCase", DRV_OTTL_TO_UPPER, 1, 1},
    {"Concat", DRV_OTTL_CONCAT, 2, 2},
    {"Substring", DRV_OTTL_SUBSTRING, 3, 3},
    {"HasPrefix", DRV_OTTL_HAS_PREFIX, 2, 2},
    {"HasSuffix", DRV_OTTL_HAS_SUFFIX, 2, 2},
    {"ParseJSON", DRV_OTTL_PARSE_JSON, 1, 1},
    {"ParseKeyValue", DRV_OTTL_PARSE_KEY_VALUE, 1, 3},
    {"ExtractPatterns", DRV_OTTL_EXTRACT_PATTERNS, 2, 2},
    {"Split", DRV_OTTL_SPLIT, 2, 2},
    {"SHA256", DRV_OTTL_SHA256, 1, 1},
    {"Now", DRV_OTTL_NOW, 0, 0},
    {"set", DRV_OTTL_SET, 2, 2},
    {"delete_key", DRV_OTTL_DELETE_KEY, 2, 2},
    {"delete_matching_keys", DRV_OTTL_DELETE_MATCHING_KEYS, 2, 2},
    {"keep_keys", DRV_OTTL_KEEP_KEYS, 2, 2},
    {"keep_matching_keys", DRV_OTTL_KEEP_MATCHING_KEYS, 2, 2},
    {"truncate_all", DRV_OTTL_TRUNCATE_ALL, 2, 2},
    {"replace_pattern", DRV_OTTL_REPLACE_PATTERN, 3, 3},
    {"replace_all_patterns", DRV_OTTL_REPLACE_ALL_PATTERNS, 4, 4},
    {"merge_maps", DRV_OTTL_MERGE_MAPS, 3, 3},
    {"limit", DRV_OTTL_LIMIT, 2, 3},
    {"flatten", DRV_OTTL_FLATTEN, 1, 3},
};
#define FUNCTIONS (sizeof s_functions / sizeof *s_functions)

//  The log context's paths: the name OTTL writes, the record's top key (a
//  map's name for those indexed), whether it takes [keys].
static const struct {
    const char *name;
    const char *key;
    bool indexed;
} s_paths[] = {
    {"body", "body", true},
    {"attributes", "attributes", true},
    {"resource.attributes", "resource", true},
    {"instrumentation_scope.name", "scope.name", false},
    {"instrumentation_scope.version", "scope.version", false},
    {"instrumentation_scope.attributes", "scope.attributes", true},
    {"scope.name", "scope.name", false},
    {"scope.version", "scope.version", false},
    {"scope.attributes", "scope.attributes", true},
    {"severity_number", "severity_number", false},
    {"severity_text", "severity_text", false},
    {"time_unix_nano", "time_unix_nano", false},
    {"observed_time_unix_nano", "observed_time_unix_nano", false},
    {"trace_id", "trace_id", false},
    {"span_id", "span_id", false},
    {"flags", "flags", false},
    {"event_name", "event_name", false},
    {"name", "name", false}, // a span's, a metric's
    {"kind", "kind", false},
    {"start_time_unix_nano", "start_time_unix_nano", false},
    {"end_time_unix_nano", "end_time_unix_nano", false},
    {"unit", "unit", false},
    {"type", "type", false},
    {"value", "value", false},
    {"cache", "cache", true}, // the statements' scratch map, one a record (not the record's)
};
#define PATHS (sizeof s_paths / sizeof *s_paths)

static const struct {
    const char *name;
    int64_t value;
} s_enums[] = {
    {"SEVERITY_NUMBER_UNSPECIFIED", 0},
    {"SEVERITY_NUMBER_TRACE", 1},
    {"SEVERITY_NUMBER_TRACE2", 2},
    {"SEVERITY_NUMBER_TRACE3", 3},
    {"SEVERITY_NUMBER_TRACE4", 4},
    {"SEVERITY_NUMBER_DEBUG", 5},
    {"SEVERITY_NUMBER_DEBUG2", 6},
    {"SEVERITY_NUMBER_DEBUG3", 7},
    {"SEVERITY_NUMBER_DEBUG4", 8},
    {"SEVERITY_NUMBER_INFO", 9},
    {"SEVERITY_NUMBER_INFO2", 10},
    {"SEVERITY_NUMBER_INFO3", 11},
    {"SEVERITY_NUMBER_INFO4", 12},
    {"SEVERITY_NUMBER_WARN", 13},
    {"SEVERITY_NUMBER_WARN2", 14},
    {"SEVERITY_NUMBER_WARN3", 15},
    {"SEVERITY_NUMBER_WARN4", 16},
    {"SEVERITY_NUMBER_ERROR", 17},
    {"SEVERITY_NUMBER_ERROR2", 18},
    {"SEVERITY_NUMBER_ERROR3", 19},
    {"SEVERITY_NUMBER_ERROR4", 20},
    {"SEVERITY_NUMBER_FATAL", 21},
    {"SEVERITY_NUMBER_FATAL2", 22},
    {"SEVERITY_NUMBER_FATAL3", 23},
    {"SEVERITY_NUMBER_FATAL4", 24},
    {"SPAN_KIND_UNSPECIFIED", 0},
    {"SPAN_KIND_INTERNAL", 1},
    {"SPAN_KIND_SERVER", 2},
    {"SPAN_KIND_CLIENT", 3},
    {"SPAN_KIND_PRODUCER", 4},
    {"SPAN_KIND_CONSUMER", 5},
};
#define ENUMS (sizeof s_enums / sizeof *s_enums)

const char *drv_ottl_function_name(drv_ottl_function_t function)
{
    for (size_t i = 0; i < FUNCTIONS; i++) {
        if (s_functions[i].function == function) {
            return s_functions[i].name;
        }
    }
    return "?";
}

int drv_ottl_function_find(const char *name, drv_ottl_function_t *function, int *min_args, int *max_args,
                           const char **close)
{
    const char *names[FUNCTIONS];
    for (size_t i = 0; i < FUNCTIONS; i++) {
        if (!strcmp(s_functions[i].name, name)) {
            *function = s_functions[i].function;
            *min_args = s_functions[i].min_args;
            *max_args = s_functions[i].max_args;
            return 0;
        }
        names[i] = s_functions[i].name;
    }
    *close = drv_suggest(name, names, FUNCTIONS);
    return -1;
}

int drv_ottl_path_find(const char *name, const char **key, bool *indexed, const char **close)
{
    const char *names[PATHS];
    for (size_t i = 0; i < PATHS; i++) {
        if (!strcmp(s_paths[i].name, name)) {
            *key = s_paths[i].key;
            *indexed = s_paths[i].indexed;
            return 0;
        }
        names[i] = s_paths[i].name;
    }
    *close = drv_suggest(name, names, PATHS);
    return -1;
}

bool drv_ottl_enum_find(const char *name, size_t len, int64_t *value)
{
    for (size_t i = 0; i < ENUMS; i++) {
        if (strlen(s_enums[i].name) == len && !memcmp(s_enums[i].name, name, len)) {
            *value = s_enums[i].value;
            return true;
        }
    }
    return false;
}
