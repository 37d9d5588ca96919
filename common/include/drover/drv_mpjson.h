/*  drv_mpjson — the spec document model (jansson) to and from msgpack bytes.
    PipelineSpecs travel as msgpack over zmq and live as json_t in memory. */
#ifndef DRV_MPJSON_H
#define DRV_MPJSON_H

#include <jansson.h>
#include <msgpack.h>
#include <stddef.h>

//  Encodes value; *data is malloc'd and owned by the caller. Returns 0 or -1.
int drv_mpjson_encode(const json_t *value, char **data, size_t *size);

//  Decodes one msgpack value that must fill the whole buffer. Returns a new
//  reference, or NULL with a reason in err (malformed, trailing bytes, too deep).
json_t *drv_mpjson_decode(const void *data, size_t size, char *err, size_t errlen);

//  Packs value with pk (receivers that take JSON bodies). Returns 0 or -1.
int drv_mpjson_pack(msgpack_packer *pk, const json_t *value);
//  value as a msgpack object in zone, nothing packed: strings and keys
//  point into value, which must outlive *out. depth: how many levels of
//  maps and arrays *out may nest (value itself counts as one). Returns 0,
//  -1 out of memory, or -2 when value nests deeper.
int drv_mpjson_object(const json_t *value, msgpack_zone *zone, int depth, msgpack_object *out);

#endif
