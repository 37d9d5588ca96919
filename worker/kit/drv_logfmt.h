/*  drv_logfmt — logfmt lines (`level=info msg="a b" took=3ms debug`) as
    record fields: each `key=value` pair a string (a quoted value with its
    escapes \" \\ \n \t \r undone; `key=` the empty string), each bare key
    true. Keys are runs of printable bytes other than `=` and `"`. */
#ifndef DRV_LOGFMT_H
#define DRV_LOGFMT_H

#include <msgpack.h>
#include <stddef.h>

//  The pairs of text (len bytes) in zone: 0 with *kv and *n (keys and
//  unquoted values point into text; unescaped values live in zone), or -1
//  with what was wrong and where in err (nothing else is promised of *kv).
int drv_logfmt_parse(const char *text, size_t len, msgpack_zone *zone, msgpack_object_kv **kv, size_t *n, char *err,
                     size_t errlen);

#endif
