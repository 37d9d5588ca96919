/*  exporter:s3's schema (worker/nodes/drv_exporter_s3.c is its code):
    what its config takes, checked when a spec is validated. Its objects
    are its batches: max_object_bytes and max_object_age_secs where the
    other exporters say batch. */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const s_fields[] = {"{signal}", "{instance}", "{seq}", "{ext}"};

int drv_s3_key_field(const char *text, size_t *len)
{
    for (int i = 0; i < 4; i++) {
        if (!strncmp(text, s_fields[i], strlen(s_fields[i]))) {
            *len = strlen(s_fields[i]);
            return i;
        }
    }
    return -1;
}

static int s_key_check(const char *template, char *err, size_t errlen)
{
    if (!template[0] || template[0] == '/') {
        snprintf(err, errlen, "must not be empty nor start with /");
        return -1;
    }
    bool seq = false;
    for (const char *c = template; *c; c++) {
        if (*c == '{') {
            size_t len = 0;
            int field = drv_s3_key_field(c, &len);
            if (field < 0) {
                snprintf(err, errlen, "%.*s: not a field (they are {signal}, {instance}, {seq}, {ext})",
                         (int)strcspn(c, "}") + 1, c);
                return -1;
            }
            seq |= field == 2;
            c += len - 1;
        } else if (*c == '%' && !strchr("YmdHMSjyuVGgeaAbBpz%", c[1] ? c[1] : ' ')) {
            snprintf(err, errlen, "%%%c: not a time conversion taken (%%Y %%m %%d %%H %%M %%S %%j ...)",
                     c[1] ? c[1] : ' ');
            return -1;
        } else if (*c == '%') {
            c++;
        }
    }
    if (!seq) {
        snprintf(err, errlen, "must hold {seq}: without it two objects may get one key");
        return -1;
    }
    return 0;
}

#define KEY_DEFAULT "{signal}/year=%Y/month=%m/day=%d/hour=%H/{instance}-{seq}.{ext}"

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    drv_export_check(check, node_path, config);
    const char *key = json_string_value(json_object_get(config, "key"));
    char why[200];
    if (key && s_key_check(key, why, sizeof why) != 0) {
        drv_spec_check_problem(check, node_path, "config.key: %s", why);
    }
    const char *bucket = json_string_value(json_object_get(config, "bucket"));
    if (bucket && (strlen(bucket) < 3 || strlen(bucket) > 63 ||
                   strspn(bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(bucket))) {
        drv_spec_check_problem(check, node_path, "config.bucket: 3 to 63 of a-z, 0-9, '.' and '-' (S3's bucket names)");
    }
    json_t *credentials = json_object_get(config, "credentials");
    const char *field;
    json_t *value;
    json_object_foreach(credentials, field, value)
    {
        if (strcmp(field, "access_key_id") && strcmp(field, "secret_access_key") && strcmp(field, "session_token")) {
            drv_spec_check_problem(check, node_path,
                                   "config.credentials.%s: unknown key (access_key_id, secret_access_key, "
                                   "session_token)",
                                   field);
        }
    }
    if (credentials &&
        !json_object_get(credentials, "access_key_id") != !json_object_get(credentials, "secret_access_key")) {
        drv_spec_check_problem(check, node_path, "config.credentials: access_key_id and secret_access_key go together");
    }
}

const drv_node_schema_t drv_schema_exporter_s3 = {
    .name = "exporter:s3",
    .role = DRV_ROLE_EXPORTER,
    .doc = "Archives records as objects in S3 or an S3-compatible store (MinIO, Ceph, R2, ...): many records an "
           "object (ndjson, otlp_json or otlp_proto; gzip, zstd or none), closed by size or age, keys from a "
           "template with time partitions and a sequence that never repeats, SigV4-signed, large objects by "
           "multipart upload; an object's records settle only once S3 took it whole, an upload given up is "
           "aborted. docs/s3.md.",
    .example = "{type: exporter:s3, config: {bucket: archive, region: eu-west-1}}",
    .keys = {{.key = "bucket", .kind = DRV_KEY_STRING, .required = true, .doc = "the bucket objects are written to"},
             {.key = "region", .kind = DRV_KEY_STRING, .fallback = "\"us-east-1\"", .doc = "the region signed for"},
             {.key = "endpoint",
              .kind = DRV_KEY_STRING,
              .doc = "an S3-compatible service's URL (http:// or https://; absent: "
                     "https://s3.REGION.amazonaws.com)"},
             {.key = "path_style",
              .kind = DRV_KEY_BOOL,
              .fallback = "false",
              .doc = "ENDPOINT/BUCKET/KEY rather than BUCKET.HOST/KEY (MinIO and most stores outside AWS)"},
             {.key = "key",
              .kind = DRV_KEY_STRING,
              .fallback = "\"" KEY_DEFAULT "\"",
              .doc = "the object key: {signal} {instance} {seq} {ext} and strftime's % conversions (UTC); "
                     "must hold {seq}"},
             {.key = "format",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"ndjson\"",
              .choices = "ndjson otlp_json otlp_proto",
              .doc = "an object's records: one JSON line each, or one OTLP Export...Request (JSON or protobuf)"},
             {.key = "compression",
              .kind = DRV_KEY_CHOICE,
              .fallback = "\"gzip\"",
              .choices = "gzip zstd none",
              .doc = "how an object is compressed (its key's ext says: .gz, .zst)"},
             {.key = "max_object_bytes",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "67108864",
              .maximum = 256LL << 20,
              .doc = "an object closes at this many bytes of records (uncompressed, as msgpack)"},
             {.key = "max_object_age_secs",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "300",
              .maximum = 86400,
              .doc = "...or this long after its first record"},
             {.key = "credentials",
              .kind = DRV_KEY_STRING_MAP,
              .secret = true,
              .doc = "{access_key_id, secret_access_key, session_token}: values may be ${file:PATH} or ${env:NAME}; "
                     "absent: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN of droverd's "
                     "environment"},
             DRV_EXPORT_TAIL_KEYS},
    .check = s_check,
    .complete = drv_export_complete,
};
