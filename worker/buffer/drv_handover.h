/*  drv_handover — what an exporter of a memory-buffered instance still
    held when the instance drained, kept for the next one (docs/operations.md,
    "Exporter queues": a replace or resize while one branch is behind). The
    draining instance writes it into a log of its own beside the pipeline's
    buffer slots, {buffer_dir}/{group}/{pipeline}/handover.{core}.{generation}.{pid}.{n}/,
    synced and renamed into place whole (writing.* until then); a running
    instance of the pipeline claims it (the flock of its `lock`), gives each
    entry's records to the exporter of that id, and deletes it once all of it
    is settled. A claimer that dies lets it go: the next reads its unsettled
    segments again (at least once). Entries are drv_buffer.h's: records an
    exporter held (the node is the exporter, the form DRV_BUFFER_RECORDS),
    or inputs the memory log kept for exporters behind (the node is the
    receiver, with the list of the exporters that had them already). */
#ifndef DRV_HANDOVER_H
#define DRV_HANDOVER_H

#include "drv_buffer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_handover_t drv_handover_t;

//  Writing: a new handover log for core and generation. NULL with err.
drv_handover_t *drv_handover_create(const char *root, const char *group, const char *pipeline, int core,
                                    int64_t generation, char *err, size_t errlen);
//  Appends an entry: an exporter's records (node: the exporter, form
//  DRV_BUFFER_RECORDS, data: a packed msgpack array), or an input kept for
//  exporters behind (node: its receiver, with the count exporters of had
//  that had it already: DRV_BUFFER_HAD's list). 0, or -1 with err.
int drv_handover_put(drv_handover_t *self, const drv_buffer_input_t *input, const char *const *had, size_t count,
                     char *err, size_t errlen);
//  Syncs it and puts it in place for a claimer (commit, when anything was
//  put), or deletes it. 0, or -1 with err (it is deleted then). Frees self.
int drv_handover_close(drv_handover_t **self_p, bool commit, char *err, size_t errlen);

//  Claiming: the first handover log of the pipeline nobody holds, or NULL.
drv_handover_t *drv_handover_claim(const char *root, const char *group, const char *pipeline);
//  Its next entry: 1 with *input (valid until the next call), 0 when none
//  is left, -1 with err.
int drv_handover_next(drv_handover_t *self, drv_buffer_input_t *input, char *err, size_t errlen);
//  Entries up to number are settled.
void drv_handover_settled(drv_handover_t *self, int64_t number);
//  Deletes what is left of it (everything was read and settled) and frees self.
void drv_handover_finish(drv_handover_t **self_p);
//  Lets it go unfinished (it stays for the next claimer) and frees self.
void drv_handover_release(drv_handover_t **self_p);
const char *drv_handover_dir(const drv_handover_t *self);

#endif
