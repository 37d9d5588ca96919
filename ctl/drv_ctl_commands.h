/*  drv_ctl_commands — droverctl's subcommands, one function each. */
#ifndef DRV_CTL_COMMANDS_H
#define DRV_CTL_COMMANDS_H

#include "drv_ctl_client.h"
#include "drv_ctl_table.h"

#include <stdbool.h>

//  Exit codes of droverctl.
#define DRV_CTL_OK 0
#define DRV_CTL_SERVER_ERROR 1 // the engine answered with an error (>= 400)
#define DRV_CTL_USAGE 2
#define DRV_CTL_UNREACHABLE 3 // no answer from the engine

#define DRV_CTL_MAX_ENDPOINTS 256
#define DRV_CTL_CONFIG "/etc/drover/drover.yaml" // where droverctl looks for droverd's config by default

typedef struct {
    drv_ctl_options_t options;                    // options.endpoint: the one being talked to
    bool json;                                    // -o json (or yaml)
    bool yaml;                                    // -o yaml: what -o json prints, as YAML
    bool watch;                                   // -w: status and rollout status keep watching
    const char *endpoints[DRV_CTL_MAX_ENDPOINTS]; // every -e, in order (apply goes node by node)
    const char *config;                           // -c: droverd's config file, to find its admin socket
    int endpoint_count;
} drv_ctl_t;

typedef struct {
    const char *name;
    const char *usage; // arguments after the name
    const char *summary;
    int (*run)(drv_ctl_t *ctl, int argc, char **argv); // argv[0] is the command name
    //  What main checks before run (ctl/main.c): the options the command
    //  takes, space-separated ("--x" a flag, "--x=" one with a value, given
    //  as --x=V or --x V, "--x=lit" that literal), and how many other
    //  arguments at most (-1: any number).
    const char *options;
    int max_args;
} drv_ctl_command_t;

extern const drv_ctl_command_t drv_ctl_commands[];

//  One admin request; on an error answer prints the engine's message and
//  returns the exit code, else stores the body in *out and returns 0.
int drv_ctl_call(drv_ctl_t *ctl, const char *method, const char *path, json_t *query, json_t *body, json_t **out);
//  Prints a body (text as is, JSON indented, or YAML with -o yaml) and releases it.
int drv_ctl_print_json(drv_ctl_t *ctl, json_t *body);
//  The status table: its columns and one pipeline's row (drv_ctl_commands.c).
struct drv_ctl_table_t;
extern const char *const drv_ctl_pipeline_columns[];
void drv_ctl_pipeline_row(struct drv_ctl_table_t *table, const char *name, json_t *status);
int drv_ctl_status(drv_ctl_t *ctl, int argc, char **argv); // drv_ctl_status.c, with describe
int drv_ctl_describe(drv_ctl_t *ctl, int argc, char **argv);
int drv_ctl_get(drv_ctl_t *ctl, int argc, char **argv); // drv_ctl_get.c
//  drv_ctl_spec.c: a spec file as the PUT body {pipeline: spec} (NULL after
//  saying why), with the pipeline the document names (get -o yaml's name:)
//  in name ("" when none), and validate -f.
json_t *drv_ctl_load_spec(const char *path, char *name, size_t name_size);
int drv_ctl_validate(drv_ctl_t *ctl, int argc, char **argv);
int drv_ctl_explain(drv_ctl_t *ctl, int argc, char **argv); // drv_ctl_explain.c
int drv_ctl_crd(drv_ctl_t *ctl, int argc, char **argv);     // drv_ctl_crd.c
//  The PipelineSpec's own keys, for explain PATH (drv_ctl_spec_keys.c).
typedef struct {
    const char *path, *type, *fallback, *doc;
} drv_ctl_spec_key_t;
extern const drv_ctl_spec_key_t drv_ctl_spec_keys[];
//  Following the event stream (drv_ctl_events.c).
int drv_ctl_events(drv_ctl_t *ctl, int argc, char **argv);
int drv_ctl_tap(drv_ctl_t *ctl, int argc, char **argv);
//  Upgrading droverd in place, and the versions (drv_ctl_upgrade.c).
int drv_ctl_upgrade(drv_ctl_t *ctl, int argc, char **argv);
int drv_ctl_version(drv_ctl_t *ctl, int argc, char **argv);
//  The OpAMP agent (drv_ctl_opamp.c).
int drv_ctl_opamp(drv_ctl_t *ctl, int argc, char **argv);
//  The mutating commands: apply, diff, shutdown and delete (drv_ctl_apply.c),
//  rollout (drv_ctl_rollout.c).
int drv_ctl_apply(drv_ctl_t *ctl, int argc, char **argv);
//  diff -f FILE [GROUP/PIPELINE]: what apply would change; exit 0 nothing, 1 something.
int drv_ctl_diff(drv_ctl_t *ctl, int argc, char **argv);
int drv_ctl_rollout(drv_ctl_t *ctl, int argc, char **argv);
int drv_ctl_completion(drv_ctl_t *ctl, int argc, char **argv);
int drv_ctl_stop_pipeline(drv_ctl_t *ctl, const char *target, bool forget, bool no_wait);
//  drv_ctl_follow.c: a rollout's plan, printed; a rollout followed until it
//  ends, each core's change printed (0 succeeded, 1 otherwise); a shutdown
//  followed until it ends (*body: its last status).
void drv_ctl_print_plan(json_t *rollout);
int drv_ctl_follow_rollout(drv_ctl_t *ctl, const char *location, json_t *first);
int drv_ctl_follow_shutdown(drv_ctl_t *ctl, const char *group, const char *pipeline, json_t **body);

//  drv_ctl_names.c: a pipeline named GROUP/PIPELINE, GROUP:PIPELINE or
//  PIPELINE (group default) split in two; prints the usage problem and
//  returns -1 when it is none of them.
int drv_ctl_split_target(const char *arg, char *group, char *pipeline, size_t size);
//  After a 404 on group/pipeline: prints the pipelines the engine has
//  whose names are closest ("did you mean"), if any is close.
void drv_ctl_suggest_pipelines(drv_ctl_t *ctl, const char *group, const char *pipeline);

#endif
