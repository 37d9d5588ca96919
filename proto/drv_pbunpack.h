/*  drv_pbunpack — protobuf bytes from outside decoded by protobuf-c into a
    msgpack zone: checked by drv_pbcheck first, then every allocation of
    the decode (protobuf-c makes one per message, string and repeated
    field) taken from the zone's chunks and given back with the zone,
    never one by one. The OTLP and remote-write receivers decode this way. */
#ifndef DRV_PBUNPACK_H
#define DRV_PBUNPACK_H

#include <msgpack.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#define DRV_PBUNPACK_NO_MEMORY (-2)

//  0 with the message in *out (it lives as long as zone), -1 with the
//  reason in err when the bytes are not a desc, DRV_PBUNPACK_NO_MEMORY when
//  the zone could not grow. Nothing to free but the zone.
int drv_pbunpack(const ProtobufCMessageDescriptor *desc, const void *data, size_t size, msgpack_zone *zone,
                 ProtobufCMessage **out, char *err, size_t errlen);

#endif
