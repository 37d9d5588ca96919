/*  drv_buffer_entry — what an input looks like in the log (drv_buffer.h
    says the payload's layout): read back from an entry, and the list of
    exporters that had it already. Below the rest of the buffer. */
#include "drv_buffer_internal.h"

#include <string.h>

bool drv_buffer_input_of(const drv_wal_entry_t *entry, char *node, drv_buffer_input_t *input)
{
    const unsigned char *data = entry->data;
    size_t idlen = entry->len > 0 ? data[0] : 0;
    if (entry->len < 2 + idlen) {
        return false;
    }
    memcpy(node, data + 1, idlen);
    node[idlen] = 0;
    size_t at = 2 + idlen, had_at = 0;
    uint8_t form = data[1 + idlen];
    if (form & DRV_BUFFER_HAD) {
        //  The exporters that had it: a count, then each id by its length.
        size_t count = at < entry->len ? data[at] : 0;
        had_at = ++at;
        for (size_t i = 0; i < count && at < entry->len; i++) {
            at += 1 + data[at];
        }
        if (at > entry->len) {
            return false;
        }
    }
    *input = (drv_buffer_input_t){.node = node,
                                  .form = form & ~DRV_BUFFER_HAD,
                                  .data = data + at,
                                  .size = entry->len - at,
                                  .records = entry->records,
                                  .number = entry->number,
                                  .time_ms = entry->time_ms,
                                  .had = had_at ? data + had_at - 1 : NULL,
                                  .had_size = had_at ? at - had_at + 1 : 0};
    return true;
}

bool drv_buffer_had(const drv_buffer_input_t *input, const char *id)
{
    size_t len = strlen(id);
    for (size_t at = 1, i = 0; input->had && i < input->had[0] && at < input->had_size; i++) {
        size_t n = input->had[at];
        if (n == len && at + 1 + n <= input->had_size && !memcmp(input->had + at + 1, id, n)) {
            return true;
        }
        at += 1 + n;
    }
    return false;
}

size_t drv_buffer_head(unsigned char *head, const drv_buffer_input_t *input, const char *const *had, size_t count)
{
    size_t idlen = strlen(input->node) > 255 ? 255 : strlen(input->node), at = 0;
    head[at++] = (unsigned char)idlen;
    memcpy(head + at, input->node, idlen);
    at += idlen;
    if (!input->had && !had) {
        head[at++] = input->form;
        return at;
    }
    //  The list: those the input says had it already, then those given.
    head[at++] = input->form | DRV_BUFFER_HAD;
    size_t count_at = at++, listed = 0;
    for (size_t k = 1, i = 0; input->had && i < input->had[0] && k < input->had_size && listed < 255; i++) {
        size_t n = input->had[k];
        memcpy(head + at, input->had + k, 1 + n);
        at += 1 + n;
        k += 1 + n;
        listed++;
    }
    for (size_t i = 0; i < count && listed < 255; i++) {
        size_t n = strlen(had[i]);
        if (n < 256 && !drv_buffer_had(input, had[i])) {
            head[at++] = (unsigned char)n;
            memcpy(head + at, had[i], n);
            at += n;
            listed++;
        }
    }
    head[count_at] = (unsigned char)listed;
    return at;
}
