/*  A syslog message as a receiver meets it (a datagram, a line, a frame):
    parsed, packed, and the record read back. Whatever the bytes, the result
    is one map of ten unique string keys whose strings are valid UTF-8. */
#include "fuzz.h"

#include "drv_syslog.h"

#include "drover/drv_utf8.h"

#include <string.h>

static void s_check_strings(const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_STR) {
        FUZZ_ASSERT(drv_utf8_valid(o->via.str.ptr, o->via.str.size, false));
    } else if (o->type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            s_check_strings(&o->via.map.ptr[i].key);
            s_check_strings(&o->via.map.ptr[i].val);
            for (uint32_t k = 0; k < i; k++) { // unique keys, as every record's
                const msgpack_object *a = &o->via.map.ptr[i].key, *b = &o->via.map.ptr[k].key;
                FUZZ_ASSERT(a->via.str.size != b->via.str.size ||
                            memcmp(a->via.str.ptr, b->via.str.ptr, a->via.str.size));
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_syslog_msg_t msg;
    drv_syslog_parse((const char *)data, size, 1795440000000LL, &msg);
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    FUZZ_ASSERT(drv_syslog_pack(&msg, &pk) == 0);
    msgpack_unpacked record;
    msgpack_unpacked_init(&record);
    FUZZ_ASSERT(msgpack_unpack_next(&record, buf.data, buf.size, NULL) == MSGPACK_UNPACK_SUCCESS);
    FUZZ_ASSERT(record.data.type == MSGPACK_OBJECT_MAP && record.data.via.map.size == 10);
    s_check_strings(&record.data);
    msgpack_unpacked_destroy(&record);
    msgpack_sbuffer_destroy(&buf);
    return 0;
}
