/*  receiver:file's schema (worker/nodes/drv_receiver_file.c is its code): what its
    config takes, checked when a spec is validated. droverd and droverctl
    link the schemas, not the kinds. */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string.h>

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    char at[512];
    size_t i;
    json_t *glob_;
    json_array_foreach(json_object_get(config, "include"), i, glob_)
    {
        const char *text = json_string_value(glob_);
        if (text && text[0] != '/') {
            snprintf(at, sizeof at, "%s.config.include[%zu]", node_path, i);
            drv_spec_check_problem(check, at, "must be an absolute path (a glob)");
        }
    }
    json_t *bytes = json_object_get(config, "max_line_bytes"), *poll = json_object_get(config, "poll_interval_ms");
    if (json_is_integer(bytes) && json_integer_value(bytes) < 16) {
        snprintf(at, sizeof at, "%s.config.max_line_bytes", node_path);
        drv_spec_check_problem(check, at, "must be at least 16");
    }
    if (json_is_integer(poll) && json_integer_value(poll) < 10) {
        snprintf(at, sizeof at, "%s.config.poll_interval_ms", node_path);
        drv_spec_check_problem(check, at, "must be at least 10");
    }
    json_t *multiline = json_object_get(config, "multiline");
    if (!multiline) {
        return;
    }
    snprintf(at, sizeof at, "%s.config.multiline", node_path);
    if (!json_is_object(multiline)) {
        drv_spec_check_problem(check, at, "must be a map with start_pattern, max_lines, max_wait_ms");
        return;
    }
    const char *key;
    json_t *value;
    json_object_foreach(multiline, key, value)
    {
        snprintf(at, sizeof at, "%s.config.multiline.%s", node_path, key);
        if (!strcmp(key, "start_pattern")) {
            int code;
            PCRE2_SIZE offset;
            pcre2_code *re = json_is_string(value)
                                 ? pcre2_compile((PCRE2_SPTR)json_string_value(value), PCRE2_ZERO_TERMINATED,
                                                 PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &offset, NULL)
                                 : NULL;
            if (!json_is_string(value)) {
                drv_spec_check_problem(check, at, "must be a PCRE2 pattern matching a message's first line");
            } else if (!re) {
                PCRE2_UCHAR why[200];
                pcre2_get_error_message(code, why, sizeof why);
                drv_spec_check_problem(check, at, "does not compile at offset %zu: %s", (size_t)offset,
                                       (const char *)why);
            }
            pcre2_code_free(re);
        } else if (!strcmp(key, "max_lines") || !strcmp(key, "max_wait_ms")) {
            if (!json_is_integer(value) || json_integer_value(value) < 1 || json_integer_value(value) > 1000000) {
                drv_spec_check_problem(check, at, "must be an integer from 1 to 1000000");
            }
        } else {
            drv_spec_check_problem(check, at, "unknown key (start_pattern, max_lines, max_wait_ms)");
        }
    }
    if (!json_object_get(multiline, "start_pattern")) {
        snprintf(at, sizeof at, "%s.config.multiline.start_pattern", node_path);
        drv_spec_check_problem(check, at, "required: a PCRE2 pattern matching a message's first line");
    }
}

const drv_node_schema_t drv_schema_receiver_file = {
    .name = "receiver:file",
    .role = DRV_ROLE_RECEIVER,
    .doc = "Follows files: one record per line (or multiline message) with body and the attributes "
           "log.file.path and log.file.name. Its checkpoints, under engine.buffer_dir, advance only when what "
           "was read before them is settled; rotation by rename or copytruncate loses and repeats nothing; on "
           "several cores each file is read by one instance. Needs engine.buffer_dir.",
    .example = "{type: receiver:file, config: {include: [/var/log/app/*.log]}, to: [out]}",
    .keys = {{.key = "include",
              .kind = DRV_KEY_STRING_LIST,
              .required = true,
              .doc = "globs of the files to follow (absolute paths)"},
             {.key = "exclude", .kind = DRV_KEY_STRING_LIST, .fallback = "[]", .doc = "globs of files left out"},
             {.key = "start_at",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"end\"",
              .choices = "end beginning",
              .doc = "where files found at the pipeline's first start are read from; files found later are "
                     "read from their beginning"},
             {.key = "format",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"text\"",
              .choices = "text cri docker ndjson",
              .doc = "text: the line; cri: TIME STREAM P|F MESSAGE (partial lines joined); docker: the "
                     "json-file driver's {log, stream, time}; ndjson: a JSON object per line"},
             {.key = "multiline",
              .kind = DRV_KEY_OBJECT,
              .doc = "{start_pattern, max_lines: 1000, max_wait_ms: 1000}: lines join the message the last line "
                     "matching start_pattern began"},
             {.key = "max_line_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "1048576",
              .maximum = 64 * 1024 * 1024,
              .doc = "longer lines are cut there and counted"},
             {.key = "poll_interval_ms",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "250",
              .maximum = 60000,
              .doc = "how often the globs are looked at again (inotify wakes it sooner)"},
             {.key = "kubernetes",
              .kind = DRV_KEY_BOOL,
              .fallback = "false",
              .doc = "adds k8s.namespace.name, k8s.pod.name, k8s.pod.uid, k8s.container.name and "
                     "k8s.container.restart_count to resource, from the kubelet's "
                     "NAMESPACE_POD_UID/CONTAINER/N.log"}},
    .check = s_check,
};
