/*  drv_admin_http_answer — an admin response as the answer to an HTTP request. */
#ifndef DRV_ADMIN_HTTP_ANSWER_H
#define DRV_ADMIN_HTTP_ANSWER_H

#include "drv_admin_request.h"

#include "drover/drv_httpd.h"

//  Answers req with the response (a JSON body gets a trailing newline; a
//  stream becomes a chunked body that goes on). The response stays the caller's.
void drv_admin_http_answer(drv_httpd_req_t *req, drv_admin_response_t *response);
//  An error answer, made before the router saw the request (refused by its
//  head, no room for its body).
void drv_admin_http_refuse(drv_httpd_req_t *req, int status, const char *kind, const char *message,
                           int retry_after_secs);

#endif
