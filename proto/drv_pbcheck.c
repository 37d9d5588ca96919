/*  drv_pbcheck — see the header. A walk of the wire format that follows the
    descriptors only into length-delimited fields that are messages, so its
    own recursion is bounded by DRV_PBCHECK_MAX_DEPTH. */
#include "drv_pbcheck.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SCANNED_ON_STACK 16 // protobuf-c's first slab of scanned members, on its stack
#define SCANNED_ENTRY 32    // sizeof(ScannedMember) on 64-bit
#define MESSAGE_SLACK 16    // per message: what small arrays and rounding add

typedef struct {
    size_t estimate; // bytes the decode would allocate
    char *err;
    size_t errlen;
} walk_t;

//  A varint at *p (at most 10 bytes, before end); advances *p.
static bool s_varint(const uint8_t **p, const uint8_t *end, uint64_t *value)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t byte = *(*p)++;
        v |= (uint64_t)(byte & 0x7f) << (shift < 64 ? shift : 63);
        if (!(byte & 0x80)) {
            *value = v;
            return true;
        }
    }
    return false;
}

//  What one element of a repeated field of this type takes in its array.
static size_t s_element_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4; // 32-bit integers, float, enum, bool
    }
}

static int s_fail(walk_t *w, const char *what, const ProtobufCMessageDescriptor *desc)
{
    snprintf(w->err, w->errlen, "%s (in %s)", what, desc->name);
    return -1;
}

static int s_message(walk_t *w, const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end, int depth)
{
    if (depth > DRV_PBCHECK_MAX_DEPTH) {
        snprintf(w->err, w->errlen, "messages nested deeper than %d levels", DRV_PBCHECK_MAX_DEPTH);
        return -1;
    }
    w->estimate += desc->sizeof_message + MESSAGE_SLACK;
    size_t occurrences = 0, noted = SCANNED_ON_STACK, next_slab = 2 * SCANNED_ON_STACK;
    while (p < end) {
        //  protobuf-c notes where each field occurrence lies before it
        //  unpacks: 16 on its stack, then slabs of 32, 64, ... entries
        //  (freed once the message is unpacked).
        if (++occurrences > noted) {
            w->estimate += next_slab * SCANNED_ENTRY;
            noted += next_slab;
            next_slab *= 2;
        }
        uint64_t tag, length;
        if (!s_varint(&p, end, &tag)) {
            return s_fail(w, "a field tag is cut short", desc);
        }
        uint32_t id = (uint32_t)(tag >> 3);
        if (id == 0 || tag >> 3 > 0x1fffffff) {
            return s_fail(w, "a field number is out of range", desc);
        }
        const ProtobufCFieldDescriptor *field = protobuf_c_message_descriptor_get_field(desc, id);
        bool repeated = field && field->label == PROTOBUF_C_LABEL_REPEATED;
        const uint8_t *value = p;
        switch (tag & 7) {
        case 0: // varint
            if (!s_varint(&p, end, &length)) {
                return s_fail(w, "a varint is cut short", desc);
            }
            break;
        case 1: // 64-bit
        case 5: // 32-bit
            if ((size_t)(end - p) < ((tag & 7) == 1 ? 8u : 4u)) {
                return s_fail(w, "a fixed-size field is cut short", desc);
            }
            p += (tag & 7) == 1 ? 8 : 4;
            break;
        case 2: // length-delimited
            if (!s_varint(&p, end, &length) || length > (uint64_t)(end - p)) {
                return s_fail(w, "a length-delimited field is longer than the bytes left", desc);
            }
            value = p;
            p += length;
            if (field && field->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (s_message(w, field->descriptor, value, p, depth + 1) != 0) {
                    return -1;
                }
            } else if (field && (field->type == PROTOBUF_C_TYPE_STRING || field->type == PROTOBUF_C_TYPE_BYTES)) {
                w->estimate += length + 1;
            } else if (repeated) {
                w->estimate += length * s_element_size(field->type); // packed: at least a byte an element
                repeated = false;
            }
            break;
        default:
            return s_fail(w, "a group or an unknown wire type", desc);
        }
        if (!field) {
            w->estimate += sizeof(ProtobufCMessageUnknownField) + (size_t)(p - value);
        } else if (repeated) {
            w->estimate += s_element_size(field->type);
        }
    }
    return 0;
}

size_t drv_pbcheck_estimate(const ProtobufCMessageDescriptor *desc, const void *data, size_t size)
{
    char err[1];
    walk_t w = {0, err, sizeof err};
    const uint8_t *start = data ? data : (const uint8_t *)"";
    return s_message(&w, desc, start, start + size, 0) == 0 ? w.estimate : 0;
}

int drv_pbcheck(const ProtobufCMessageDescriptor *desc, const void *data, size_t size, char *err, size_t errlen)
{
    walk_t w = {0, err, errlen};
    const uint8_t *start = data ? data : (const uint8_t *)"";
    if (s_message(&w, desc, start, start + size, 0) != 0) {
        return -1;
    }
    size_t allowed = DRV_PBCHECK_GROWTH * size + DRV_PBCHECK_SLACK;
    if (w.estimate > allowed) {
        snprintf(err, errlen, "the message would take %zu bytes decoded, more than %d times its %zu bytes", w.estimate,
                 DRV_PBCHECK_GROWTH, size);
        return -1;
    }
    return 0;
}
