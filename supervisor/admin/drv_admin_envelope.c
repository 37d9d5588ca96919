/*  drv_admin_envelope — the admin API's zmq request frame, decoded and
    checked: msgpack {method, path, query?, body?} into a drv_admin_request_t
    (the transport fills in how to reply). Its own file so that the fuzzer
    (tests/fuzz/fuzz_admin.c) drives exactly what a hostile frame meets. */
#include "drv_admin.h"

#include "drover/drv_mpjson.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

size_t drv_admin_percent_decode(char *text)
{
    char *out = text;
    for (const char *in = text; *in; in++) {
        int hi, lo;
        if (in[0] == '%' && (hi = s_hex(in[1])) >= 0 && (lo = s_hex(in[2])) >= 0) {
            unsigned char byte = (unsigned char)(hi * 16 + lo);
            *out++ = (char)(byte ? byte : 0xff);
            in += 2;
        } else {
            *out++ = *in;
        }
    }
    *out = 0;
    return (size_t)(out - text);
}

//  "a=1&b=x" into query, percent-decoded as HTTP's is (the router checks
//  that names and values are valid UTF-8).
static void s_parse_query(const char *text, json_t *query)
{
    char *copy = strdup(text);
    char *save = NULL;
    for (char *pair = strtok_r(copy, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (eq) {
            *eq = 0;
        }
        drv_admin_percent_decode(pair);
        const char *value = eq ? eq + 1 : "";
        size_t len = eq ? drv_admin_percent_decode(eq + 1) : 0;
        json_object_set_new_nocheck(query, pair, json_stringn_nocheck(value, len));
    }
    free(copy);
}

//  Validates the envelope; returns a request or NULL with why.
static drv_admin_request_t *s_request(json_t *doc, char *why, size_t whylen)
{
    if (!json_is_object(doc)) {
        snprintf(why, whylen, "the request must be a map {method, path, query?, body?}");
        return NULL;
    }
    json_t *method = json_object_get(doc, "method");
    json_t *path = json_object_get(doc, "path");
    json_t *query = json_object_get(doc, "query");
    if (!json_is_string(method) || json_string_length(method) == 0 || json_string_length(method) > 7) {
        snprintf(why, whylen, "method: must be GET, PUT, POST or DELETE");
        return NULL;
    }
    if (!json_is_string(path) || json_string_value(path)[0] != '/') {
        snprintf(why, whylen, "path: must be a string starting with /");
        return NULL;
    }
    if (query && !json_is_object(query) && !json_is_null(query)) {
        snprintf(why, whylen, "query: must be a map of strings");
        return NULL;
    }
    drv_admin_request_t *request = calloc(1, sizeof *request);
    for (size_t i = 0; i < json_string_length(method); i++) {
        request->method[i] = (char)toupper((unsigned char)json_string_value(method)[i]);
    }
    request->query = json_object();
    const char *key;
    json_t *value;
    json_object_foreach(query, key, value)
    {
        if (json_is_string(value)) {
            json_object_set(request->query, key, value);
        } else if (json_is_boolean(value)) {
            json_object_set_new(request->query, key, json_string(json_is_true(value) ? "true" : "false"));
        } else if (json_is_integer(value)) {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(value));
            json_object_set_new(request->query, key, json_string(num));
        } else {
            snprintf(why, whylen, "query.%s: must be a string", key);
            json_decref(request->query);
            free(request);
            return NULL;
        }
    }
    const char *full = json_string_value(path);
    const char *mark = strchr(full, '?');
    request->path = mark ? strndup(full, (size_t)(mark - full)) : strdup(full);
    drv_admin_percent_decode(request->path);
    if (mark) {
        s_parse_query(mark + 1, request->query);
    }
    json_t *body = json_object_get(doc, "body");
    request->body = body && !json_is_null(body) ? json_incref(body) : NULL;
    return request;
}

drv_admin_request_t *drv_admin_envelope_decode(const void *data, size_t size, char *why, size_t whylen)
{
    char reason[300] = "";
    json_t *doc = drv_mpjson_decode(data, size, reason, sizeof reason);
    if (!doc) {
        snprintf(why, whylen, "request frame refused: %s", reason);
        return NULL;
    }
    drv_admin_request_t *request = s_request(doc, why, whylen);
    json_decref(doc);
    return request;
}
