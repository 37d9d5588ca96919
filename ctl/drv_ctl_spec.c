/*  drv_ctl_spec — spec files in droverctl: what apply -f reads (a bare
    PipelineSpec, the PUT body {pipeline: spec}, or what get/describe -o
    json|yaml printed, whose spec it takes), and validate -f, which checks
    a spec or a whole config file offline with the engine's own code and
    messages: the same node schemas, the same "path: message" lines. What
    only a running engine can judge (an endpoint another pipeline holds,
    paths outside its engine.data_dirs) is left to apply's dry run. */
#include "drv_ctl_commands.h"
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include "drover/drv_config.h"
#include "drover/drv_cpus.h"
#include "drover/drv_problems.h"
#include "drover/drv_spec.h"
#include "drover/drv_yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILE_MAX (1 << 20)

//  The file's text ("-": stdin), NUL-terminated; NULL after saying why.
static char *s_read(const char *path, size_t *size)
{
    FILE *file = !strcmp(path, "-") ? stdin : fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "droverctl: cannot open %s\n", path);
        return NULL;
    }
    char *text = malloc(FILE_MAX);
    *size = fread(text, 1, FILE_MAX - 1, file);
    text[*size] = 0;
    if (file != stdin) {
        fclose(file);
    }
    return text;
}

//  The PipelineSpec in a document: its "pipeline" (a PUT body), its "spec"
//  (a GET answer), or the document itself (borrowed).
static json_t *s_spec_of(json_t *doc)
{
    if (json_is_object(json_object_get(doc, "pipeline"))) {
        return json_object_get(doc, "pipeline");
    }
    if (json_is_object(json_object_get(doc, "spec")) && json_object_get(doc, "status")) {
        return json_object_get(doc, "spec");
    }
    return doc;
}

json_t *drv_ctl_load_spec(const char *path, char *name, size_t name_size)
{
    if (name_size) {
        *name = 0;
    }
    size_t size;
    char *text = s_read(path, &size);
    if (!text) {
        return NULL;
    }
    char err[300];
    json_t *doc = drv_yaml_parse(text, size, NULL, err, sizeof err);
    free(text);
    if (!doc) {
        fprintf(stderr, "droverctl: %s: %s\n", path, err);
        return NULL;
    }
    json_t *body = json_pack("{s:O}", "pipeline", s_spec_of(doc));
    const char *named = json_string_value(json_object_get(doc, "name")); // get -o yaml names it
    if (named && name_size) {
        snprintf(name, name_size, "%s", named);
    }
    json_decref(doc);
    return body;
}

//  A config file: droverd --check's own loader and message.
static int s_validate_config(const char *path)
{
    if (!strcmp(path, "-")) {
        fprintf(stderr, "droverctl: a config file is validated from its path, not stdin\n");
        return DRV_CTL_USAGE;
    }
    drv_cpus_t cpus;
    drv_cpus_allowed(&cpus);
    char err[1024];
    drv_config_t *config = drv_config_load(path, &cpus, err, sizeof err);
    if (!config) {
        fprintf(stderr, "droverctl: %s\n", err);
        return DRV_CTL_SERVER_ERROR;
    }
    printf("%s: a valid config file\n", path);
    drv_config_destroy(&config);
    return DRV_CTL_OK;
}

//  A spec: what PUT would answer 422 with, each problem on a line (with
//  its line in the file).
static int s_validate_spec(const char *path, json_t *doc, const json_t *lines)
{
    bool body = json_is_object(json_object_get(doc, "pipeline"));
    drv_cpus_t cpus;
    drv_cpus_allowed(&cpus);
    drv_spec_env_t env = {.cpus = &cpus};
    drv_problems_t *problems = drv_problems_new();
    json_t *spec = drv_spec_normalize(s_spec_of(doc), &env, "", problems);
    size_t count = drv_problems_count(problems);
    int rc = DRV_CTL_OK;
    if (count > 0) {
        fprintf(stderr, "droverctl: %s: invalid PipelineSpec: %zu problem%s\n", path, count, count > 1 ? "s" : "");
        for (size_t i = 0; i < count; i++) {
            char field[300], where[32] = "";
            snprintf(field, sizeof field, "%s%s", body ? "pipeline." : "", drv_problems_path(problems, i));
            int line = drv_yaml_line_of(lines, field);
            if (line) {
                snprintf(where, sizeof where, " (line %d)", line);
            }
            fprintf(stderr, "  %s%s: %s\n", drv_problems_path(problems, i), where, drv_problems_message(problems, i));
        }
        rc = DRV_CTL_SERVER_ERROR;
    } else {
        char *hash = drv_spec_hash(spec);
        printf("%s: a valid PipelineSpec (spec_hash %s)\n", path, hash ? hash : "?");
        free(hash);
    }
    drv_problems_destroy(&problems);
    json_decref(spec);
    return rc;
}

//  validate -f FILE: a config file (it has engine: or groups:) or a spec.
int drv_ctl_validate(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)ctl;
    const char *path = argc == 3 && !strcmp(argv[1], "-f") ? argv[2] : NULL;
    if (!path) {
        fprintf(stderr, "droverctl: usage: droverctl validate -f FILE (a PipelineSpec or a config file)\n");
        return DRV_CTL_USAGE;
    }
    size_t size;
    char *text = s_read(path, &size);
    if (!text) {
        return DRV_CTL_USAGE;
    }
    char err[1024];
    json_t *lines = NULL;
    json_t *doc = drv_yaml_parse(text, size, &lines, err, sizeof err);
    free(text);
    if (!doc) {
        fprintf(stderr, "droverctl: %s: %s\n", path, err);
        return DRV_CTL_SERVER_ERROR;
    }
    drv_schemas_register();                               // every node kind's schema, as droverd has them
    bool scripts_checked = drv_script_check_use_worker(); // scripts too, by the drover-worker beside droverctl
    bool config = json_is_object(doc) && (json_object_get(doc, "engine") || json_object_get(doc, "groups"));
    int rc = config ? s_validate_config(path) : s_validate_spec(path, doc, lines);
    char *dumped = scripts_checked ? NULL : json_dumps(doc, JSON_COMPACT);
    if (rc == DRV_CTL_OK && dumped && strstr(dumped, "processor:lua")) {
        fprintf(stderr, "droverctl: scripts were not compiled: no drover-worker beside droverctl (droverd compiles "
                        "them when the spec is applied)\n");
    }
    free(dumped);
    json_decref(lines);
    json_decref(doc);
    return rc;
}
