/*  drv_pbunpack — see drv_pbunpack.h. */
#include "drv_pbunpack.h"
#include "drv_pbcheck.h"

#include <stdbool.h>
#include <stdio.h>

//  A decode that failed for want of memory is told from one that failed on the bytes.
typedef struct {
    msgpack_zone *zone;
    bool short_of_memory;
} unpack_t;

static void *s_alloc(void *data, size_t size)
{
    unpack_t *u = data;
    void *p = msgpack_zone_malloc(u->zone, size);
    u->short_of_memory |= !p;
    return p;
}

static void s_free(void *data, void *p)
{
    (void)data;
    (void)p; // the zone gives everything back at once
}

int drv_pbunpack(const ProtobufCMessageDescriptor *desc, const void *data, size_t size, msgpack_zone *zone,
                 ProtobufCMessage **out, char *err, size_t errlen)
{
    char why[240];
    *out = NULL;
    if (drv_pbcheck(desc, data, size, why, sizeof why) != 0) {
        snprintf(err, errlen, "malformed protobuf: %s", why);
        return -1;
    }
    unpack_t u = {.zone = zone};
    ProtobufCAllocator allocator = {.alloc = s_alloc, .free = s_free, .allocator_data = &u};
    *out = protobuf_c_message_unpack(desc, &allocator, size, data);
    if (!*out) {
        snprintf(err, errlen, u.short_of_memory ? "out of memory" : "malformed protobuf");
        return u.short_of_memory ? DRV_PBUNPACK_NO_MEMORY : -1;
    }
    return 0;
}
