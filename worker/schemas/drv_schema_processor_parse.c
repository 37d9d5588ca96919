/*  processor:parse's schema (worker/nodes/drv_processor_parse.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. A regex is compiled here with PCRE2, so
    a pattern that does not compile, or has no named group, is refused with
    the spec (docs/nodes.md). */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string.h>

void *drv_parse_compile(const char *pattern, char *err, size_t errlen)
{
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                                   &code, &offset, NULL);
    if (!re) {
        PCRE2_UCHAR why[200];
        pcre2_get_error_message(code, why, sizeof why);
        snprintf(err, errlen, "does not compile at offset %zu: %s", (size_t)offset, (const char *)why);
        return NULL;
    }
    uint32_t names = 0;
    pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &names);
    if (names == 0) {
        snprintf(err, errlen, "has no named group: name what it captures, as (?<name>...)");
        pcre2_code_free(re);
        return NULL;
    }
    return re;
}

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    const char *format = json_string_value(json_object_get(config, "format"));
    json_t *pattern = json_object_get(config, "pattern");
    bool regex = format && !strcmp(format, "regex");
    char at[512];
    snprintf(at, sizeof at, "%s.config.pattern", node_path);
    if (regex && !json_is_string(pattern)) {
        drv_spec_check_problem(check, at, "required with format regex: a PCRE2 pattern with named groups");
    } else if (!regex && pattern) {
        drv_spec_check_problem(check, at, "only with format regex");
    } else if (regex) {
        char err[300];
        void *re = drv_parse_compile(json_string_value(pattern), err, sizeof err);
        if (!re) {
            drv_spec_check_problem(check, at, "%s", err);
        }
        pcre2_code_free(re);
    }
}

const drv_node_schema_t drv_schema_processor_parse = {
    .name = "processor:parse",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Parses one string field into many: JSON, logfmt, or a regex's named groups (PCRE2, JIT where "
           "available, with a match limit so that no pattern stalls an instance). A record whose field "
           "cannot be parsed is counted in errors and passed on as it was (on_error: pass) or dropped.",
    .example = "{type: processor:parse, config: {format: regex, pattern: '^(?<method>\\S+) "
               "(?<path>\\S+)'}, to: [out]}",
    .keys = {{.key = "field", .kind = DRV_KEY_STRING, .fallback = "\"body\"", .doc = "the top-level field parsed"},
             {.key = "format",
              .kind = DRV_KEY_CHOICE,
              .required = true,
              .choices = "json logfmt regex",
              .doc = "json: an object; logfmt: key=value pairs; regex: pattern's named groups"},
             {.key = "pattern",
              .kind = DRV_KEY_STRING,
              .doc = "format regex: a PCRE2 pattern with named groups (?<name>...); unnamed groups are not kept"},
             {.key = "into",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"attributes\"",
              .choices = "attributes root",
              .doc = "where the parsed fields go: the record's attributes map (made when absent) or its top "
                     "level; a parsed field replaces one of the same name"},
             {.key = "keep_original",
              .kind = DRV_KEY_BOOL,
              .fallback = "true",
              .doc = "false: the parsed field is removed once parsed"},
             {.key = "max_keys",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "1000",
              .maximum = 1000000,
              .doc = "a record whose field parses into more keys is not parsed (an error, as on_error says): "
                     "one line of a hundred thousand pairs cannot take an instance's time"},
             {.key = "on_error",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"pass\"",
              .choices = "pass drop",
              .doc = "a record whose field is missing, not a string or not parsed: passed on unchanged, or "
                     "dropped; counted in errors either way"}},
    .check = s_check,
};
