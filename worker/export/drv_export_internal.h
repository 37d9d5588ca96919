/*  drv_export_internal — what drv_export.c (batches, node hooks) and
    drv_export_post.c (posting them with libcurl) share. */
#ifndef DRV_EXPORT_INTERNAL_H
#define DRV_EXPORT_INTERNAL_H

#include "drv_export.h"
#include "drv_export_config.h"
#include "drv_queue.h"

#include "drover/drv_curl_loop.h"

#include <curl/curl.h>

#define RESPONSE_KEPT 300 // bytes of an error answer quoted in the log

typedef struct batch_t {
    struct batch_t *next;
    int lane;
    //  Its records as taken (the lane's zone, handed over at close), and
    //  once it is first posted the body they encode to, kept for retries: a
    //  batch that waits behind a dead backend is never encoded
    //  (drv_export_encode). The records stay until it is delivered: a
    //  draining instance may hand them to the next (drv_export_node_hand_over).
    msgpack_zone zone;
    msgpack_object *taken;
    bool zone_ready;
    char *body;
    size_t size;
    size_t packed; // its records' bytes, packed, as they were taken (queue.max_bytes counts these)
    size_t records;
    size_t gave_up;      // of them, given up while the rest goes on (drv_export_gave_up)
    int64_t first_input; // oldest input it holds
    int64_t *inputs;     // every input it holds records of, in order (told when it is given up)
    size_t input_count;
    int64_t taken_ms;         // mono: when its first record was taken
    int64_t first_attempt_ms; // 0 before its first attempt
    int64_t next_attempt_ms;
    int64_t backoff_ms;
    bool failing;               // an attempt failed: it is being retried
    bool sending;               // an attempt is under way (posted, or with the sender)
    void *sent;                 // the sender's state for it (drv_export_sender_t)
    CURL *easy;                 // while posted
    struct curl_slist *headers; // the easy handle's
    char response[RESPONSE_KEPT + 1];
    size_t response_len;
    int grpc_status; // gRPC: grpc-status of the answer (-1: none yet)
    char grpc_message[RESPONSE_KEPT + 1];
    int64_t grpc_retry_ms; // gRPC: RetryInfo's delay (-1: none)
} batch_t;

typedef struct {
    msgpack_zone zone; // the records taken, copied (drv_record_copy): the batch zone is cleared under them
    msgpack_object *records;
    size_t cap;
    size_t bytes; // what they take packed (batch.max_bytes counts it)
    bool zone_ready;
    size_t count;
    int64_t first_input;
    int64_t *inputs; // the inputs of the records taken, each once
    size_t input_count, input_cap;
    int64_t opened_ms;
} lane_t;

struct drv_export_t {
    drv_node_t *node;
    drv_export_settings_t settings;
    drv_export_format_t format;
    lane_t lanes[DRV_EXPORT_LANES];
    batch_t *head, *tail;                  // closed batches, oldest first, posted or waiting
    size_t queued_bytes;                   // their records, packed (what queue.max_bytes counts)
    size_t batches;                        // and how many
    size_t lane_batches[DRV_EXPORT_LANES]; // of each lane
    drv_queue_t queue;                     // how much may wait, and what happens then
    size_t in_flight;
    drv_curl_loop_t curl; // libcurl's multi on the loop
    bool draining;
    bool flushing; // close open batches at once (drv_export_node_flush)
    //  An attempt failed and the queue has not been empty since: one post
    //  at a time, oldest first, so the backlog reaches a backend that comes
    //  back in order (docs/operations.md, "Exporter queues").
    bool catching_up;
    unsigned seed; // jitter
};

//  drv_export.c
//  How many batches may be posted at once now: DRV_EXPORT_IN_FLIGHT, or 1
//  while catching up.
static inline size_t drv_export_in_flight(const drv_export_t *self)
{
    const drv_export_sender_t *sender = self->format.sender;
    size_t asked = sender && sender->in_flight ? sender->in_flight : self->format.in_flight;
    return self->catching_up ? 1 : asked ? asked : DRV_EXPORT_IN_FLIGHT;
}
//  Whether batch may be posted as far as its lane goes: with lanes_in_order
//  only the oldest of its lane may; seen (0 before the first, the batches
//  met from head on) is kept by the caller.
static inline bool drv_export_lane_turn(const drv_export_t *self, const batch_t *batch, unsigned *seen)
{
    unsigned bit = 1u << batch->lane;
    bool first = !(*seen & bit);
    *seen |= bit;
    return first || !self->format.lanes_in_order;
}
void drv_export_close(drv_export_t *self, int lane);
//  Encodes a closed batch's records into its body (gzip'd, framed as the
//  format says). 0, or -1 with err: it cannot be sent.
int drv_export_encode(drv_export_t *self, batch_t *batch, char *err, size_t errlen);
void drv_export_unlink(drv_export_t *self, batch_t *batch);
void drv_export_batch_free(drv_export_t *self, batch_t *batch);

//  drv_export_post.c
//  Ends the batch's attempt: takes it out of curl, or forgets the
//  sender's state when it goes.
void drv_export_finish(drv_export_t *self, batch_t *batch);
//  Hands curl what is ready, collects what finished, closes the batches
//  that are due and posts the ones waiting.
void drv_export_run(drv_export_t *self);

//  drv_export_grpc.c
//  Puts the gRPC message prefix in front of body.
int drv_export_grpc_frame(char **body, size_t *size, bool compressed);
//  Makes the easy handle a gRPC call of url; returns headers with the gRPC ones added.
struct curl_slist *drv_export_grpc_setup(CURL *easy, batch_t *batch, const char *url, bool gzip, int64_t timeout_ms,
                                         struct curl_slist *headers);
//  What a finished call's answer means for its batch (why: for the log;
//  *retry_after_ms: RetryInfo's delay, 0 when it gave none).
drv_export_verdict_t drv_export_grpc_verdict(const batch_t *batch, long http_status, char *why, size_t whylen,
                                             int64_t *retry_after_ms);

#endif
