/*  processor:lua's schema (worker/nodes/drv_processor_lua.c is its code):
    what its config takes, checked when a spec is validated. The script is
    compiled then (drv_spec_check_script), so a syntax error is a 422 naming
    the line; script_file is read each time the spec is applied (the
    complete hook): its text becomes the normalized spec's script, with its
    digest, so a changed file is a changed spec. */
#include "drv_schemas.h"

#include "drover/drv_file.h"
#include "drover/drv_limits.h"
#include "drover/drv_node_schema.h"
#include "drover/drv_utf8.h"

#include <ctype.h>
#include <czmq.h>
#include <stdio.h>
#include <string.h>

#define MIN_MEMORY (1024 * 1024) // max_memory_bytes at least

static bool s_identifier(const char *name)
{
    if (!name || !(*name == '_' || (*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z'))) {
        return false;
    }
    for (const char *p = name; *p; p++) {
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) {
            return false;
        }
    }
    return true;
}

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    char path[300];
    json_t *script = json_object_get(config, "script");
    json_t *file = json_object_get(config, "script_file");
    snprintf(path, sizeof path, "%s.config", node_path);
    if (!script && !file) {
        drv_spec_check_problem(check, path, "give the script as script (its text) or script_file (a path)");
    } else if (script && file && !json_object_get(config, "script_sha1")) {
        //  Both with a digest is a normalized spec applied again (a restore):
        //  the file is read again and wins.
        drv_spec_check_problem(check, path, "give script or script_file, not both");
    }
    if (json_is_string(file)) {
        const char *name = json_string_value(file);
        snprintf(path, sizeof path, "%s.config.script_file", node_path);
        if (name[0] != '/' || strlen(name) > DRV_LIMIT_PATH) {
            drv_spec_check_problem(check, path, "must be an absolute path of at most %d bytes", DRV_LIMIT_PATH);
        } else if (!drv_spec_check_path_allowed(check, name)) {
            drv_spec_check_problem(check, path, "%s is outside engine.data_dirs and run_dir (absolute, without \"..\")",
                                   name);
        }
    }
    json_t *function = json_object_get(config, "function");
    if (json_is_string(function) && !s_identifier(json_string_value(function))) {
        snprintf(path, sizeof path, "%s.config.function", node_path);
        drv_spec_check_problem(check, path, "\"%s\" is not a Lua name", json_string_value(function));
    }
    json_t *memory = json_object_get(config, "max_memory_bytes");
    if (json_is_integer(memory) && json_integer_value(memory) < MIN_MEMORY) {
        snprintf(path, sizeof path, "%s.config.max_memory_bytes", node_path);
        drv_spec_check_problem(check, path, "must be at least %d", MIN_MEMORY);
    }
}

static void s_complete(drv_spec_check_t *check, const char *node_path, json_t *normalized)
{
    char path[300], err[400];
    json_t *file = json_object_get(normalized, "script_file");
    snprintf(path, sizeof path, "%s.config.%s", node_path, file ? "script_file" : "script");
    char *text = NULL;
    size_t length = 0;
    if (json_is_string(file) && !drv_spec_check_path_allowed(check, json_string_value(file))) {
        return; // s_check said so; nothing outside data_dirs is opened, so nothing of it is told
    }
    if (json_is_string(file)) {
        if (!(text = drv_file_read(json_string_value(file), DRV_LIMIT_SCRIPT, &length, err, sizeof err))) {
            drv_spec_check_problem(check, path, "%s", err);
            return;
        }
        if (!drv_utf8_valid(text, length, false)) {
            drv_spec_check_problem(check, path, "%s is not UTF-8 text", json_string_value(file));
            free(text);
            return;
        }
        json_object_set_new(normalized, "script", json_stringn(text, length));
    } else if (json_is_string(json_object_get(normalized, "script"))) {
        text = strdup(json_string_value(json_object_get(normalized, "script")));
        length = json_string_length(json_object_get(normalized, "script"));
    } else {
        return;
    }
    if (length > DRV_LIMIT_SCRIPT) {
        drv_spec_check_problem(check, path, "the script is larger than %d bytes", DRV_LIMIT_SCRIPT);
    } else if (drv_spec_check_script(text, length, err, sizeof err) < 0) {
        drv_spec_check_problem(check, path, "syntax error at %s", err);
    }
    zdigest_t *digest = zdigest_new();
    zdigest_update(digest, (const byte *)text, length);
    char hex[64];
    snprintf(hex, sizeof hex, "%s", zdigest_string(digest));
    for (char *p = hex; *p; p++) {
        *p = (char)tolower((unsigned char)*p); // as sha1sum prints it
    }
    json_object_set_new(normalized, "script_sha1", json_string(hex));
    zdigest_destroy(&digest);
    free(text);
}

const drv_node_schema_t drv_schema_processor_lua = {
    .name = "processor:lua",
    .role = DRV_ROLE_PROCESSOR,
    .doc = "Runs a Lua 5.4 function on each record (sandboxed: no io, os or require, with instruction and "
           "memory limits). It returns the record, a list of records, or nil (dropped).",
    .example = "{type: processor:lua, config: {script: \"function process(r) r.seen = true; return r "
               "end\"}, to: [out]}",
    .keys = {{.key = "script", .kind = DRV_KEY_STRING, .doc = "the script's text (this or script_file)"},
             {.key = "script_file",
              .kind = DRV_KEY_STRING,
              .doc = "a file the script is read from when the spec is applied (its text is part of the spec's "
                     "hash)"},
             {.key = "script_sha1",
              .kind = DRV_KEY_STRING,
              .doc = "with script_file: the SHA-1 its text must have, else the spec is refused"},
             {.key = "function",
              .kind = DRV_KEY_STRING,
              .fallback = "\"process\"",
              .doc = "the global function called with each record"},
             {.key = "on_error",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"drop\"",
              .choices = "drop pass",
              .doc = "a record the script fails on: drop it, or pass it on unchanged (counted in errors either "
                     "way)"},
             {.key = "record",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"table\"",
              .choices = "table lazy",
              .doc = "what the function is given: table, the record as a Lua table of all its fields; lazy, a "
                     "table that reads a field only when the script reads it and keeps only what the script "
                     "changes (faster when a script touches few of many fields; next(), rawget() and # see "
                     "nothing, pairs() works, and a record is usable only in its own call: docs/operations.md, "
                     "\"Lua\")"},
             {.key = "max_instructions",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "1000000",
              .maximum = 2147483647,
              .doc = "per record; past it the call fails"},
             {.key = "max_memory_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "67108864",
              .maximum = 4294967296LL,
              .doc = "the Lua state's memory; past it the call fails"}},
    .check = s_check,
    .complete = s_complete,
};
