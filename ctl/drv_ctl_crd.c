/*  drv_ctl_crd — droverctl crd: the CustomResourceDefinition of
    DroverPipeline (docs/kubernetes.md, "Pipelines as Kubernetes
    resources"), its OpenAPI v3 schema made from the node kinds' own
    schemas, so that it cannot drift from what droverd validates. A node's
    config keeps unknown fields (x-kubernetes-preserve-unknown-fields): the
    API server prunes nothing, and droverd refuses what is wrong with its
    own message, in the resource's status. deploy/kubernetes/crd/ ships
    what this prints (test_cli checks it is current). Offline. */
#include "drv_ctl_commands.h"
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"
#include "drover/drv_yaml.h"

#include <stdio.h>
#include <stdlib.h>

static json_t *s_typed(const char *type, const char *description)
{
    return json_pack("{s:s, s:s}", "type", type, "description", description);
}

//  A node: its type (one of the kinds), its config, where it sends to.
static json_t *s_node(void)
{
    size_t count;
    const drv_node_schema_t *const *kinds = drv_spec_kinds(&count);
    json_t *names = json_array();
    for (size_t i = 0; i < count; i++) {
        json_array_append_new(names, json_string(kinds[i]->name));
    }
    json_t *type = s_typed("string", "the node's kind (droverctl explain lists them)");
    json_object_set_new(type, "enum", names);
    json_t *config = s_typed("object", "the kind's settings (droverctl explain TYPE); droverd checks them");
    json_object_set_new(config, "x-kubernetes-preserve-unknown-fields", json_true());
    json_t *to = s_typed("array", "the nodes it sends its records to");
    json_object_set_new(to, "items", json_pack("{s:s}", "type", "string"));
    return json_pack("{s:s, s:[s], s:{s:o, s:o, s:o}}", "type", "object", "required", "type", "properties", "type",
                     type, "config", config, "to", to);
}

static json_t *s_pipeline(void)
{
    json_t *set = s_typed("array", "these CPUs");
    json_object_set_new(set, "items", json_pack("{s:s, s:i}", "type", "integer", "minimum", 0));
    json_t *count = s_typed("integer", "this many of the CPUs droverd may use");
    json_object_set_new(count, "minimum", json_integer(1));
    json_t *cores =
        json_pack("{s:s, s:s, s:{s:o, s:o, s:o}}", "type", "object", "description", "exactly one of count, set, all",
                  "properties", "count", count, "set", set, "all", s_typed("boolean", "every CPU droverd may use"));
    json_t *nodes = s_typed("object", "the nodes by id");
    json_object_set_new(nodes, "minProperties", json_integer(1));
    json_object_set_new(nodes, "additionalProperties", s_node());
    json_t *policies = s_typed("object", "rollout, restart, buffer, health (droverctl explain policies)");
    json_object_set_new(policies, "x-kubernetes-preserve-unknown-fields", json_true());
    return json_pack("{s:s, s:s, s:[s], s:{s:o, s:o, s:o}}", "type", "object", "description",
                     "a PipelineSpec, as PUT /api/v1/groups/GROUP/pipelines/NAME takes it", "required", "nodes",
                     "properties", "cores", cores, "nodes", nodes, "policies", policies);
}

//  status.engines.<droverd's name>: what each droverd watching it says.
static json_t *s_status(void)
{
    json_t *rollout =
        json_pack("{s:s, s:{s:o, s:o}}", "type", "object", "properties", "id", s_typed("string", "the rollout's id"),
                  "state", s_typed("string", "running, paused, succeeded, failed, ..."));
    json_t *engine =
        json_pack("{s:s, s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o}}", "type", "object", "properties", "observedGeneration",
                  s_typed("integer", "the resource's generation this droverd acted on last"), "generation",
                  s_typed("integer", "the pipeline's generation serving"), "phase",
                  s_typed("string", "the pipeline's phase (running, updating, degraded, ...), invalid or conflict"),
                  "readyInstances", s_typed("integer", "instances ready"), "rollout", rollout, "message",
                  s_typed("string", "why it is not as asked, when it is not"), "updatedAt",
                  s_typed("string", "when this entry was written (RFC 3339)"));
    json_t *engines = s_typed("object", "one entry per droverd (POD_NAME), each written by that droverd alone");
    json_object_set_new(engines, "additionalProperties", engine);
    return json_pack("{s:s, s:{s:o}}", "type", "object", "properties", "engines", engines);
}

static json_t *s_crd(void)
{
    json_t *group = s_typed("string", "the group of the pipeline (default: default); its name is metadata.name");
    json_object_set_new(group, "pattern", json_string("^[a-z0-9_-]{1,63}$"));
    json_t *spec = json_pack("{s:s, s:[s], s:{s:o, s:o}}", "type", "object", "required", "pipeline", "properties",
                             "group", group, "pipeline", s_pipeline());
    json_t *schema =
        json_pack("{s:s, s:s, s:[s], s:{s:{s:s}, s:{s:s}, s:{s:s}, s:o, s:o}}", "type", "object", "description",
                  "A pipeline of droverd's, reconciled by every droverd that watches it (docs/kubernetes.md)",
                  "required", "spec", "properties", "apiVersion", "type", "string", "kind", "type", "string",
                  "metadata", "type", "object", "spec", spec, "status", s_status());
    json_t *columns = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}, {s:s, s:s, s:s}]", "name",
                                "Group", "type", "string", "jsonPath", ".spec.group", "name", "Generation", "type",
                                "integer", "jsonPath", ".metadata.generation", "name", "Engines", "type", "string",
                                "jsonPath", ".status.engines.*.phase", "description", "each droverd's phase for it",
                                "name", "Age", "type", "date", "jsonPath", ".metadata.creationTimestamp");
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:{s:s, s:s, s:s, s:s, s:[s]}, s:s, s:[{s:s, s:b, s:b, "
                     "s:{s:{}}, s:o, s:{s:o}}]}}",
                     "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata", "name",
                     "droverpipelines.drover.dev", "labels", "app.kubernetes.io/name", "drover", "spec", "group",
                     "drover.dev", "names", "kind", "DroverPipeline", "listKind", "DroverPipelineList", "plural",
                     "droverpipelines", "singular", "droverpipeline", "shortNames", "dp", "scope", "Namespaced",
                     "versions", "name", "v1alpha1", "served", 1, "storage", 1, "subresources", "status",
                     "additionalPrinterColumns", columns, "schema", "openAPIV3Schema", schema);
}

int drv_ctl_crd(drv_ctl_t *ctl, int argc, char **argv)
{
    (void)ctl, (void)argc, (void)argv;
    drv_schemas_register();
    json_t *crd = s_crd();
    char *text = drv_yaml_emit(crd);
    json_decref(crd);
    if (!text) {
        fprintf(stderr, "droverctl: out of memory\n");
        return 1;
    }
    printf("# The DroverPipeline CustomResourceDefinition: droverctl crd prints it (docs/kubernetes.md).\n%s", text);
    free(text);
    return 0;
}
