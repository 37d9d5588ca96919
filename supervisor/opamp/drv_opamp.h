/*  drv_opamp — droverd as an OpAMP agent (docs/operations.md, OpAMP; the OpAMP
    specification, plain HTTP transport): it POSTs an AgentToServer
    (protobuf) to engine.opamp.endpoint and reads the ServerToAgent that
    answers. The first message is a full report (description,
    capabilities, health, effective config); later ones carry only what
    changed (a heartbeat with nothing else when nothing did), sent every
    poll_interval_secs and at once when something changed. One request at
    a time, on droverd's loop (libcurl's multi interface behind one epoll
    descriptor); a failed request is retried with backoff (1 s doubling
    to 60 s, or the server's RetryInfo) and the next one that goes
    through is a full report, as is every one after ReportFullState. */
#ifndef DRV_OPAMP_H
#define DRV_OPAMP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct drv_opamp_t drv_opamp_t;
struct drv_engine_t;

//  The agent of engine.opamp; NULL with "" in err when there is none, or
//  with the reason (an instance_uid_file that cannot be written).
drv_opamp_t *drv_opamp_new(struct drv_engine_t *engine, char *err, size_t errlen);
void drv_opamp_destroy(drv_opamp_t **self_p);

//  The descriptor to poll for reading (-1: none).
int drv_opamp_fd(drv_opamp_t *self);
//  Does what is due or ready (sends, reads answers); returns ms until it
//  has something to do (-1: nothing).
int64_t drv_opamp_tick(drv_opamp_t *self);

//  GET /api/v1/opamp: {enabled, endpoint, instance_uid, state,
//  last_contact_at, requests, failures, last_error, …} (new reference);
//  {enabled: false} when self is NULL.
json_t *drv_opamp_json(drv_opamp_t *self);

#endif
