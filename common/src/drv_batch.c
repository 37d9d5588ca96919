/*  drv_batch — see drv_batch.h. */
#include "drover/drv_batch.h"
#include "drover/drv_mpcheck.h"

#include <stdio.h>

int drv_batch_decode(const void *data, size_t size, msgpack_zone *zone, msgpack_object *root,
                     const msgpack_object **records, char *err, size_t errlen)
{
    //  Checked first: a hostile count must not become a huge allocation.
    if (drv_mpcheck(data, size, err, errlen) != 0) {
        return -1;
    }
    size_t offset = 0;
    if (msgpack_unpack(data, size, &offset, zone, root) != MSGPACK_UNPACK_SUCCESS) {
        snprintf(err, errlen, "malformed msgpack");
        return -1;
    }
    if (root->type == MSGPACK_OBJECT_MAP) {
        *records = root;
        return 1;
    }
    if (root->type != MSGPACK_OBJECT_ARRAY) {
        snprintf(err, errlen, "message is neither a map (record) nor an array of maps (batch)");
        return -1;
    }
    for (uint32_t i = 0; i < root->via.array.size; i++) {
        if (root->via.array.ptr[i].type != MSGPACK_OBJECT_MAP) {
            snprintf(err, errlen, "batch item %u is not a map", i);
            return -1;
        }
    }
    *records = root->via.array.ptr;
    return (int)root->via.array.size;
}
