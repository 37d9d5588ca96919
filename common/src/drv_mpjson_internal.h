/*  Shared by the codecs inside common/: msgpack-c types stay in common/src. */
#ifndef DRV_MPJSON_INTERNAL_H
#define DRV_MPJSON_INTERNAL_H

#include <jansson.h>
#include <msgpack.h>

//  prefix names obj in error messages ("" or NULL: the top).
json_t *drv_mpjson_from_object(const msgpack_object *obj, const char *prefix, char *err, size_t errlen);

#endif
