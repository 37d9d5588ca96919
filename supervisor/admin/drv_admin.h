/*  drv_admin — the admin API, once, for both transports (docs/operations.md, the admin API).
    A transport turns what it received into a drv_admin_request_t and gives it
    to drv_admin_dispatch; the router answers through request->reply exactly
    once — now, or later for requests that wait (rollouts), without ever
    blocking the loop. */
#ifndef DRV_ADMIN_H
#define DRV_ADMIN_H

#include "drv_admin_request.h"
#include "drv_engine.h"

#include <jansson.h>
#include <stdbool.h>

#define DRV_ADMIN_MAX_BODY (1024 * 1024) // larger bodies get 413
#define DRV_ADMIN_HTTP_IDLE_SECS 10      // an idle or half-sent HTTP connection is closed after this

//  A zmq request frame, msgpack {method, path, query?, body?}, checked and
//  turned into a request (transport, authorized and reply left for the
//  caller), or NULL with the reason in why (drv_admin_envelope.c).
drv_admin_request_t *drv_admin_envelope_decode(const void *data, size_t size, char *why, size_t whylen);

//  The group or pipeline a route names, or NULL with a 404 (group_not_found
//  or pipeline_not_found) already in response (drv_admin_pipelines.c).
drv_group_t *drv_admin_lookup_group(drv_engine_t *engine, const char *name, drv_admin_response_t *response);
drv_pipeline_t *drv_admin_lookup_pipeline(drv_engine_t *engine, const char *group, const char *name,
                                          drv_admin_response_t *response);

//  The query parameter name as a whole number in [min, max] (fallback when
//  absent). Returns 0, or -1 with a 400 naming it in response.
int drv_admin_query_int(drv_admin_request_t *request, const char *name, const char *unit, int64_t fallback, int64_t min,
                        int64_t max, int64_t *out, drv_admin_response_t *response);

//  Percent-decodes text in place and returns its new length. %00 becomes
//  the byte 0xFF (never valid UTF-8), so that a NUL smuggled into a name is
//  refused by the router with 400 instead of cutting the name short.
size_t drv_admin_percent_decode(char *text);

//  Routes the request. Always ends in exactly one request->reply call.
void drv_admin_dispatch(drv_engine_t *engine, drv_admin_request_t *request);

#endif
