/*  drv_node_schema — what a node kind accepts in its config, as data the
    spec validator reads. Each kind declares its schema once, in its own file
    under worker/nodes/, beside its code; programs that validate specs
    register the list of kinds (drv_schemas_register) before the first one. */
#ifndef DRV_NODE_SCHEMA_H
#define DRV_NODE_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { DRV_ROLE_RECEIVER, DRV_ROLE_PROCESSOR, DRV_ROLE_EXPORTER } drv_node_role_t;

typedef enum {
    DRV_KEY_STRING,      // non-empty string
    DRV_KEY_ENDPOINT,    // tcp://... or ipc://... (ipc paths confined to engine.data_dirs)
    DRV_KEY_NONNEG_INT,  // integer from 0 to maximum
    DRV_KEY_OBJECT,      // any map
    DRV_KEY_ANY,         // any value
    DRV_KEY_STRING_LIST, // list of strings
    DRV_KEY_STRING_MAP,  // map whose values are strings
    DRV_KEY_CHOICE,      // one of choices
    DRV_KEY_BOOL,        // true or false
    DRV_KEY_FILE_PATH,   // a path to write (confined to engine.data_dirs and run_dir)
} drv_key_kind_t;

typedef struct {
    const char *key;
    drv_key_kind_t kind;
    bool required;
    const char *fallback;      // JSON text of the default, or NULL for none
    const char *choices;       // for DRV_KEY_CHOICE: space-separated
    int64_t maximum;           // for DRV_KEY_NONNEG_INT: the largest value (0: INT64_MAX)
    bool secret;               // its value (a map's: each value) is shown only to readers holding
                               // the admin token (drv_spec_redact; docs/security.md)
    const char *secret_fields; // for a secret map: only these of its keys (space-separated; NULL: every one)
    const char *doc;           // what it is for, one sentence (droverctl explain, docs/nodes.md)
    const char *reference;     // a language's reference (OTTL's), printed by droverctl explain TYPE.KEY; or NULL
} drv_config_key_t;

#define DRV_NODE_MAX_KEYS 16

//  Where a kind's own rules report what is wrong (drv_spec.c).
typedef struct drv_spec_check_t drv_spec_check_t;
void drv_spec_check_problem(drv_spec_check_t *check, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct {
    const char *name; // "processor:filter"
    drv_node_role_t role;
    //  What it does, and a node of it as YAML ({type: ..., config: ..., to:
    //  [out]}) that validates: droverctl explain prints them, docs/nodes.md
    //  is generated from them (test_cli checks it is current).
    const char *doc;
    const char *example;
    //  Markdown of what it makes of its input beyond its keys (a
    //  translation table; NULL: nothing): docs/nodes.md carries it under the
    //  example, droverctl explain TYPE prints it.
    const char *details;
    drv_config_key_t keys[DRV_NODE_MAX_KEYS]; // ends at the first without a key
    //  Rules beyond single keys (NULL: none); config is the node's config
    //  as given, node_path "nodes.ID".
    void (*check)(drv_spec_check_t *check, const char *node_path, const json_t *config);
    //  Kinds that choose where each record goes from their config
    //  (processor:route): every node id the config sends to, as a new JSON
    //  array. The node's own `to` is then not used: these are its edges,
    //  checked like `to` (they exist, take input, make no cycle) and kept
    //  as `to` in the normalized spec. NULL: the node's `to`.
    json_t *(*targets)(const json_t *config);
    //  Completes the normalized config (defaults filled in) from what lies
    //  outside the spec, each time the spec is applied: processor:lua reads
    //  its script_file here, so the file's text is part of the spec and
    //  its hash. Problems go to check. NULL: nothing to complete.
    void (*complete)(drv_spec_check_t *check, const char *node_path, json_t *normalized);
} drv_node_schema_t;

//  True when a file the spec names lies where the engine lets specs reach
//  (engine.data_dirs and run_dir; anywhere when data_dirs is not set).
bool drv_spec_check_path_allowed(const drv_spec_check_t *check, const char *path);
//  The only variables ${env:} may name in the spec being checked (NULL: any).
const char *const *drv_spec_check_env_names(const drv_spec_check_t *check);

//  How a script's syntax is checked (processor:lua's schema): 0, or -1 with
//  "line N: what" in err. The worker's programs compile it themselves;
//  droverd and droverctl, which do not link Lua, ask drover-worker
//  (drv_script_check_exec). Set once at start; without one, scripts are not
//  checked until an instance compiles them.
typedef int(drv_script_check_fn)(void *arg, const char *text, size_t length, char *err, size_t errlen);
void drv_spec_set_script_check(drv_script_check_fn *check, void *arg);
//  For a schema's hook: 0 (well formed), -1 (the syntax error in err), or 1
//  when no checker is set.
int drv_spec_check_script(const char *text, size_t length, char *err, size_t errlen);
//  drv_script_check_fn that runs `WORKER --check-script` (arg: its path),
//  the script on its stdin: what it says, or why it could not be asked.
int drv_script_check_exec(void *arg, const char *text, size_t length, char *err, size_t errlen);
//  Sets drv_script_check_exec with the drover-worker beside this program's
//  executable, when there is one: true, else scripts go unchecked.
bool drv_script_check_use_worker(void);

//  The kinds a program knows. Call once, before validating any spec.
void drv_spec_set_kinds(const drv_node_schema_t *const *kinds, size_t count);
//  Those kinds, in table order, and one of them by name (NULL: none).
const drv_node_schema_t *const *drv_spec_kinds(size_t *count);
const drv_node_schema_t *drv_spec_kind(const char *name);
//  True when a kind's config key holds a secret (drv_config_key_t.secret);
//  field: one key of a secret map (only secret_fields are, when listed),
//  or NULL for the key itself.
bool drv_spec_secret(const drv_node_schema_t *schema, const char *key, const char *field);

#endif
