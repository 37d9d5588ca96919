/*  drv_config_env — ${env:NAME} and ${env:NAME:-default} in the strings of
    the config file (docs/operations.md, "The config file's environment"):
    each is replaced by droverd's environment variable NAME as the file is
    read (at start, at each reload, by droverd --check), before anything
    is checked, so that an endpoint or a resource attribute may come from
    a DaemonSet's environment. `$${` is a literal `${`. A variable that is
    not set (without a default) refuses the file, naming its line.

    Not expanded: the values of secret keys (a kind's keys marked secret,
    engine.opamp.headers), whose reference the spec keeps and the instance
    resolves (docs/security.md, so that the secret is never in a spec), and
    a remote config's groups (an OpAMP server's text is not droverd's to
    fill in: drv_config_groups_parse never calls this). */
#include "drv_config_internal.h"

#include "drover/drv_node_schema.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_BYTES 512

typedef struct {
    char *text;
    size_t used, size;
} out_t;

static bool s_put(out_t *out, const char *text, size_t len)
{
    if (out->used + len + 1 > out->size) {
        size_t size = (out->used + len + 1) * 2;
        char *grown = realloc(out->text, size);
        if (!grown) {
            return false;
        }
        out->text = grown;
        out->size = size;
    }
    memcpy(out->text + out->used, text, len);
    out->used += len;
    out->text[out->used] = '\0';
    return true;
}

//  value with every reference replaced: a new string, or NULL with the
//  reason in err.
static char *s_expand(const char *value, char *err, size_t errlen)
{
    out_t out = {0};
    const char *at = value;
    bool ok = s_put(&out, "", 0);
    while (ok && *at) {
        if (!strncmp(at, "$${", 3)) {
            ok = s_put(&out, "${", 2);
            at += 3;
            continue;
        }
        if (strncmp(at, "${env:", 6) != 0) {
            size_t plain = strcspn(at + 1, "$") + 1;
            ok = s_put(&out, at, plain);
            at += plain;
            continue;
        }
        const char *name = at + 6, *end = name;
        while (isalnum((unsigned char)*end) || *end == '_') {
            end++;
        }
        const char *fallback = NULL, *close = end;
        if (!strncmp(end, ":-", 2)) {
            fallback = end + 2;
            close = strchr(fallback, '}');
        }
        if (end == name || isdigit((unsigned char)*name) || !close || *close != '}') {
            snprintf(err, errlen,
                     "%.*s: ${env:NAME} or ${env:NAME:-default}, NAME letters, digits and _ (a literal "
                     "${ is written $${)",
                     (int)strcspn(at, "}") + 1, at);
            free(out.text);
            return NULL;
        }
        char var[256];
        snprintf(var, sizeof var, "%.*s", (int)(end - name), name);
        const char *set = getenv(var);
        if (!set && !fallback) {
            snprintf(err, errlen, "${env:%s}: %s is not set in droverd's environment (give a default: ${env:%s:-...})",
                     var, var, var);
            free(out.text);
            return NULL;
        }
        ok = set ? s_put(&out, set, strlen(set)) : s_put(&out, fallback, (size_t)(close - fallback));
        at = close + 1;
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        free(out.text);
        return NULL;
    }
    return out.text;
}

//  A string at path expanded in place (in parent, under key or at index).
static void s_string(json_t *parent, const char *key, size_t index, json_t *value, const char *path,
                     drv_problems_t *problems)
{
    const char *text = json_string_value(value);
    if (!strstr(text, "${")) {
        return;
    }
    char why[400];
    char *expanded = s_expand(text, why, sizeof why);
    if (!expanded) {
        drv_problems_add(problems, path, "%s", why);
        return;
    }
    json_t *string = json_string(expanded); // NULL: a variable's value is not UTF-8
    free(expanded);
    if (!string) {
        drv_problems_add(problems, path, "%s: a variable's value is not UTF-8", text);
    } else if (key) {
        json_object_set_new(parent, key, string);
    } else {
        json_array_set_new(parent, index, string);
    }
}

//  schema: value is the config of a node of that kind (its secret keys are
//  kept); secret_key: value is that key's secret map (its secret fields
//  are kept). Both NULL elsewhere.
static void s_walk(json_t *value, const char *path, const drv_node_schema_t *schema, const char *secret_key,
                   drv_problems_t *problems)
{
    if (json_is_string(value) || (!json_is_array(value) && !json_is_object(value))) {
        return;
    }
    size_t count = json_is_array(value) ? json_array_size(value) : 0;
    for (size_t i = 0; i < count; i++) {
        char here[PATH_BYTES];
        snprintf(here, sizeof here, "%s[%zu]", path, i);
        json_t *child = json_array_get(value, i);
        if (json_is_string(child)) {
            s_string(value, NULL, i, child, here, problems);
        } else {
            s_walk(child, here, NULL, NULL, problems);
        }
    }
    const char *key;
    json_t *child;
    void *tmp;
    json_object_foreach_safe(value, tmp, key, child)
    {
        char here[PATH_BYTES];
        snprintf(here, sizeof here, "%s%s%s", path, path[0] ? "." : "", key);
        const drv_node_schema_t *kind = NULL;
        const char *map = NULL;
        if (schema && secret_key ? drv_spec_secret(schema, secret_key, key)
                                 : schema && drv_spec_secret(schema, key, NULL) && !json_is_object(child)) {
            continue; // a secret's reference stays, for the instance to resolve
        }
        if (schema && !secret_key && json_is_object(child) && drv_spec_secret(schema, key, NULL)) {
            kind = schema, map = key; // a secret map: each of its fields judged
        } else if (!schema && !strcmp(key, "config") && json_is_string(json_object_get(value, "type"))) {
            kind = drv_spec_kind(json_string_value(json_object_get(value, "type"))); // a node's config
        }
        if (json_is_string(child)) {
            s_string(value, key, 0, child, here, problems);
        } else {
            s_walk(child, here, kind, map, problems);
        }
    }
}

void drv_config_env_expand(json_t *doc, drv_problems_t *problems)
{
    json_t *headers = json_object_get(json_object_get(json_object_get(doc, "engine"), "opamp"), "headers");
    json_incref(headers);
    json_t *opamp = json_object_get(json_object_get(doc, "engine"), "opamp");
    if (headers) {
        json_object_del(opamp, "headers"); // secrets, resolved when the client sends them
    }
    s_walk(doc, "", NULL, NULL, problems);
    if (headers) {
        json_object_set_new(opamp, "headers", headers);
    }
}
