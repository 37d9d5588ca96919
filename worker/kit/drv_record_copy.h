/*  drv_record_copy — a record copied whole into a zone of its own: what an
    exporter that holds records past the batch they came in (the batch zone
    is cleared for the next) takes, instead of packing them to unpack them
    again when the batch it sends is encoded. */
#ifndef DRV_RECORD_COPY_H
#define DRV_RECORD_COPY_H

#include <msgpack.h>
#include <stddef.h>

//  Copies src (and everything it points to) into zone as *dst. Returns the
//  bytes src takes packed as msgpack (what batch limits count), or 0 out of
//  memory.
size_t drv_record_copy(msgpack_zone *zone, const msgpack_object *src, msgpack_object *dst);

#endif
