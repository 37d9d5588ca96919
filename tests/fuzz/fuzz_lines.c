/*  What receiver:file and the record paths read from text nobody checked:
    a logfmt line, a CRI line, an RFC 3339 time, a kubelet log path, a
    record path (then set, read and deleted in a record). Whatever the
    bytes: no crash, what is parsed lies within what was given, and a path
    that parses can be set, read back and deleted. */
#include "fuzz.h"

#include "drv_line_format.h"
#include "drv_logfmt.h"
#include "drv_record_path.h"

#include "drover/drv_path.h"

#include <stdlib.h>
#include <string.h>

static void s_paths(const char *text)
{
    drv_path_t path;
    char err[200];
    if (drv_path_parse(text, &path, err, sizeof err) != 0) {
        FUZZ_ASSERT(err[0] != 0);
        return;
    }
    FUZZ_ASSERT(path.depth >= 1 && path.depth <= DRV_PATH_MAX_DEPTH);
    drv_record_path_t keys = {.depth = path.depth};
    for (int i = 0; i < path.depth; i++) {
        keys.keys[i] = (msgpack_object){.type = MSGPACK_OBJECT_STR};
        keys.keys[i].via.str.ptr = path.keys[i];
        keys.keys[i].via.str.size = (uint32_t)path.lengths[i];
    }
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object record = {.type = MSGPACK_OBJECT_MAP}, value = {.type = MSGPACK_OBJECT_POSITIVE_INTEGER};
    value.via.u64 = 42;
    FUZZ_ASSERT(drv_record_path_set(&zone, &record, &keys, &value));
    const msgpack_object *found = drv_record_path_get(&record, &keys);
    FUZZ_ASSERT(found && found->type == MSGPACK_OBJECT_POSITIVE_INTEGER && found->via.u64 == 42);
    FUZZ_ASSERT(drv_record_path_delete(&zone, &record, &keys));
    FUZZ_ASSERT(!drv_record_path_get(&record, &keys));
    msgpack_zone_destroy(&zone);
    drv_path_free(&path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object_kv *kv;
    size_t n;
    char err[300];
    if (drv_logfmt_parse(text, size, &zone, &kv, &n, err, sizeof err) == 0) {
        for (size_t i = 0; i < n; i++) {
            FUZZ_ASSERT(kv[i].key.type == MSGPACK_OBJECT_STR && kv[i].key.via.str.size > 0);
            FUZZ_ASSERT(kv[i].key.via.str.ptr >= text && kv[i].key.via.str.ptr + kv[i].key.via.str.size <= text + size);
            FUZZ_ASSERT(kv[i].val.type == MSGPACK_OBJECT_STR || kv[i].val.type == MSGPACK_OBJECT_BOOLEAN);
        }
    }
    msgpack_zone_destroy(&zone);
    drv_cri_line_t cri;
    if (drv_cri_parse(text, size, &cri)) {
        FUZZ_ASSERT(cri.time_ns >= 0);
        FUZZ_ASSERT(cri.message >= text && cri.message + cri.message_len <= text + size);
    }
    drv_rfc3339_ns(text, size);
    char *copy = malloc(size + 1);
    memcpy(copy, data, size);
    copy[size] = 0;
    if (strlen(copy) == size) { // paths hold no NUL
        drv_kube_path_t kube;
        if (drv_kube_path(copy, &kube)) {
            FUZZ_ASSERT(kube.uid[0] && kube.restart_count >= 0);
        }
        s_paths(copy);
    }
    free(copy);
    return 0;
}
