/*  drv_spec_redact — a spec as shown to a reader without the admin token:
    every secret config value (a kind's keys marked secret, each value of a
    secret map) replaced, and passwords in URLs hidden; references to
    secrets (${file:...}, ${env:...}) are shown, being no secret. */
#include "drv_spec_internal.h"

#include "drover/drv_secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  "scheme://user:password@host..." -> "scheme://user:(redacted)@host...";
//  NULL when there is no password to hide.
static char *s_url_without_password(const char *url)
{
    const char *authority = strstr(url, "://");
    if (!authority) {
        return NULL;
    }
    authority += 3;
    size_t span = strcspn(authority, "/?#");
    const char *at = memchr(authority, '@', span);
    const char *colon = at ? memchr(authority, ':', (size_t)(at - authority)) : NULL;
    if (!colon) {
        return NULL;
    }
    char *out = NULL;
    if (asprintf(&out, "%.*s%s%s", (int)(colon + 1 - url), url, DRV_SPEC_REDACTED, at) < 0) {
        return NULL;
    }
    return out;
}

//  True when word is one of the space-separated words of list.
static bool s_word_of(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *at = strstr(list, word); at; at = strstr(at + 1, word)) {
        if ((at == list || at[-1] == ' ') && (at[len] == ' ' || at[len] == 0)) {
            return true;
        }
    }
    return false;
}

bool drv_spec_secret(const drv_node_schema_t *schema, const char *key, const char *field)
{
    for (size_t i = 0; schema && i < DRV_NODE_MAX_KEYS && schema->keys[i].key; i++) {
        const drv_config_key_t *def = &schema->keys[i];
        if (!strcmp(def->key, key)) {
            //  sasl.mechanism and sasl.username are no secret
            return def->secret && (!field || !def->secret_fields || s_word_of(def->secret_fields, field));
        }
    }
    return false;
}

static void s_redact_config(const drv_node_schema_t *schema, json_t *config)
{
    const char *key;
    json_t *value;
    json_object_foreach(config, key, value)
    {
        if (drv_spec_secret(schema, key, NULL)) {
            if (json_is_object(value)) {
                const char *name;
                json_t *item;
                json_object_foreach(value, name, item)
                {
                    if (!drv_spec_secret(schema, key, name)) {
                        continue;
                    }
                    if (!drv_secret_is_ref(json_string_value(item))) { // a reference is no secret
                        json_object_set_new(value, name, json_string(DRV_SPEC_REDACTED));
                    }
                }
            } else if (!drv_secret_is_ref(json_string_value(value))) {
                json_object_set_new(config, key, json_string(DRV_SPEC_REDACTED));
            }
        } else if (json_is_string(value)) {
            char *hidden = s_url_without_password(json_string_value(value));
            if (hidden) {
                json_object_set_new(config, key, json_string(hidden));
                free(hidden);
            }
        }
    }
}

json_t *drv_spec_redact(const json_t *spec)
{
    json_t *copy = json_deep_copy(spec);
    const char *id;
    json_t *node;
    json_object_foreach(json_object_get(copy, "nodes"), id, node)
    {
        json_t *config = json_object_get(node, "config");
        if (json_is_object(config)) {
            s_redact_config(drv_spec_kind(json_string_value(json_object_get(node, "type"))), config);
        }
    }
    return copy;
}
