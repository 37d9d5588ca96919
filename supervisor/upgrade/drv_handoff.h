/*  drv_handoff — what one droverd hands the next across an upgrade in
    place: a JSON document in a memory file whose descriptor survives the
    execution (DROVER_UPGRADE_FD), plus the descriptors it names (the
    receivers' and the admin HTTP server's listening sockets). The layout
    is in docs/operations.md ("Upgrading drover").

    A handoff is taken only when it is one droverd itself wrote
    (docs/security.md): FD must be a memory file named drover-handoff, of
    a bounded size, and every process the document names (the broker, the
    instances) a child of this one, which an execution keeps and a fresh
    start has none of. Written since the nonce came
    (DROVER_UPGRADE_NONCE), the file must also be sealed against any
    change and hold that nonce and the pid of the droverd that wrote it.
    Anything else (a variable inherited from a shell, a pipe, a file
    shaped like one) is said and droverd starts afresh; reading never
    blocks. */
#ifndef DRV_HANDOFF_H
#define DRV_HANDOFF_H

#include "drv_engine.h"

//  The document's layout; a new droverd says which one it reads
//  (`droverd --upgrade-check FORMAT`) before the old one executes it.
#define DRV_HANDOFF_FORMAT 1
#define DRV_HANDOFF_ENV "DROVER_UPGRADE_FD"
#define DRV_HANDOFF_NONCE_ENV "DROVER_UPGRADE_NONCE"

//  Writes the document (record: the upgrade's own {by, from_version, ...})
//  and executes engine->exe_path with engine->argv. Returns only on
//  failure: -1 with why, everything as it was.
int drv_handoff_exec(drv_engine_t *engine, const json_t *record, char *why, size_t whylen);

//  In the new droverd, before anything else: the document the old one
//  left, or NULL (none; or, with err set, one that is not droverd's own or
//  cannot be read). The variable is unset either way.
json_t *drv_handoff_take(char *err, size_t errlen);

//  Whether doc is one this droverd can take over from, else why.
bool drv_handoff_understood(const json_t *doc, char *why, size_t whylen);

//  The registry from engine->handoff (consumed): pipelines as they ran,
//  their listening sockets, their instances and the broker adopted as
//  running processes. Returns the upgrade's record (new reference) with
//  "config", the hashes of what the config file declared when the state
//  was applied; NULL when there was no handoff.
json_t *drv_handoff_adopt(drv_engine_t *engine);
//  The admin HTTP server's listening socket doc hands over, or -1.
int drv_handoff_http_fd(const json_t *doc);

#endif
