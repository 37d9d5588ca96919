/*  drv_opamp_internal — what the OpAMP agent's files share: the agent's
    state (drv_opamp.c: scheduling and transport), what it reports
    (drv_opamp_report.c: description, health, effective config, and their
    fingerprints) and its identity (drv_opamp_uid.c). */
#ifndef DRV_OPAMP_INTERNAL_H
#define DRV_OPAMP_INTERNAL_H

#include "drv_engine.h"
#include "drv_opamp.h"

#include "opamp/opamp.pb-c.h"

#include "drover/drv_curl_loop.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#define DRV_OPAMP_RESPONSE_MAX (16u << 20) // a ServerToAgent larger than this is refused
#define DRV_OPAMP_BACKOFF_MIN_MS 1000
#define DRV_OPAMP_BACKOFF_MAX_MS 60000

#define DRV_OPAMP_HASH_MAX 160 // a remote config's hash, as hex

//  RemoteConfigStatuses of the specification.
enum { DRV_OPAMP_UNSET = 0, DRV_OPAMP_APPLIED, DRV_OPAMP_APPLYING, DRV_OPAMP_FAILED };

//  Capabilities drover reports (AgentCapabilities of the specification).
#define DRV_OPAMP_REPORTS_STATUS 0x1
#define DRV_OPAMP_ACCEPTS_REMOTE_CONFIG 0x2
#define DRV_OPAMP_REPORTS_EFFECTIVE_CONFIG 0x4
#define DRV_OPAMP_REPORTS_HEALTH 0x800
#define DRV_OPAMP_REPORTS_REMOTE_CONFIG 0x1000
#define DRV_OPAMP_CAPABILITIES                                                                                         \
    (DRV_OPAMP_REPORTS_STATUS | DRV_OPAMP_ACCEPTS_REMOTE_CONFIG | DRV_OPAMP_REPORTS_EFFECTIVE_CONFIG |                 \
     DRV_OPAMP_REPORTS_HEALTH | DRV_OPAMP_REPORTS_REMOTE_CONFIG)

//  What was last reported and acknowledged: a part is sent again only when
//  its fingerprint changed, or in a full report.
typedef struct {
    char *health;     // the health tree as text
    char *effective;  // the effective config's key (drv_opamp_effective_key)
    bool description; // the description went (it never changes while droverd runs)
    uint64_t remote;  // the remote config status's version
} drv_opamp_sent_t;

//  The last remote config, and what became of it.
typedef struct {
    char hash[DRV_OPAMP_HASH_MAX]; // "" before the first
    int status;                    // DRV_OPAMP_*
    char error[4096];              // why it FAILED
    char skipped[2048];            // while APPLYING: the pipelines admission refused
    json_t *tracking;              // while APPLYING: [{group, pipeline, rollout_id}]
    json_t *groups;                // the groups it declared, as applied (NULL: none since droverd started)
    uint64_t version;              // grows with every change of the above
} drv_opamp_remote_t;

struct drv_opamp_t {
    drv_engine_t *engine;
    json_t *config; // engine.opamp, normalized
    uint8_t uid[16];
    uint64_t sequence;
    drv_curl_loop_t curl; // libcurl's multi on droverd's loop
    CURL *easy;           // the one request in flight, or NULL
    struct curl_slist *headers;
    uint8_t *request; // its body
    size_t request_size;
    uint8_t *response; // what came back so far (at most DRV_OPAMP_RESPONSE_MAX)
    size_t response_size;
    bool response_too_large;
    drv_opamp_remote_t remote;
    bool restored;            // what the state file kept was read (at the first tick: the state is loaded by
                              // then)
    drv_opamp_sent_t sent;    // acknowledged
    drv_opamp_sent_t sending; // in the request in flight
    bool full;                // the next report is a full one
    int64_t next_ms;          // mono: the next poll
    int64_t check_ms;         // mono: when health and config are next looked at for a change
    int64_t backoff_ms;       // after a failure (0: none)
    //  For GET /api/v1/opamp.
    const char *state;       // "connecting", "connected", "failing"
    int64_t last_contact_ms; // wall ms of the last answer the server gave (0: never)
    int64_t requests, failures;
    char last_error[512];
};

//  ---- drv_opamp_uid.c

//  The instance_uid kept in path (16 bytes, a UUIDv7 made and written on
//  first use); -1 with the reason in err.
int drv_opamp_uid_load(const char *path, uint8_t uid[16], char *err, size_t errlen);
//  A uid the server assigned, kept for the next start.
int drv_opamp_uid_save(const char *path, const uint8_t uid[16], char *err, size_t errlen);
//  "xxxxxxxx-xxxx-…" into out (37 bytes).
void drv_opamp_uid_text(const uint8_t uid[16], char out[37]);

//  ---- drv_opamp_remote.c

//  The last remote config's outcome, as the state file kept it.
void drv_opamp_remote_restore(drv_opamp_t *self);
//  A remote config the server sent: applied unless its hash is the last one's.
void drv_opamp_remote_offer(drv_opamp_t *self, const Opamp__Proto__AgentRemoteConfig *config);
//  While APPLYING: APPLIED or FAILED once every rollout it started ended.
void drv_opamp_remote_tick(drv_opamp_t *self);
//  Fills status (its hash bytes in hash) when there is one to tell; false when UNSET.
bool drv_opamp_remote_report(drv_opamp_t *self, Opamp__Proto__RemoteConfigStatus *status, uint8_t *hash,
                             size_t hashlen);
const char *drv_opamp_remote_status_name(int status);

//  ---- drv_opamp_report.c

//  The health tree (engine -> group:pipeline -> instance) as text: its
//  fingerprint, and what the message is made from.
char *drv_opamp_health_text(drv_engine_t *engine);
//  The running groups, as YAML: the effective config.
char *drv_opamp_effective_text(drv_engine_t *engine);
//  What tells whether it changed, made without making it: each running
//  pipeline's key and spec hash (the YAML is made only when this differs).
char *drv_opamp_effective_key(drv_engine_t *engine);
//  An AgentToServer with the parts that differ from what the server has
//  (self->sent; all of them when full); what was put in is remembered in
//  self->sending. NULL out of memory.
typedef struct drv_opamp_report_t drv_opamp_report_t;
drv_opamp_report_t *drv_opamp_report_build(drv_opamp_t *self, bool full);
Opamp__Proto__AgentToServer *drv_opamp_report_msg(drv_opamp_report_t *report);
void drv_opamp_report_free(drv_opamp_report_t **report_p);

#endif
