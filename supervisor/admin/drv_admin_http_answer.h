/*  drv_admin_http_answer — queueing an admin response on an MHD connection. */
#ifndef DRV_ADMIN_HTTP_ANSWER_H
#define DRV_ADMIN_HTTP_ANSWER_H

#include "drv_admin_request.h"

#include <microhttpd.h>

//  Queues the response (a JSON body gets a trailing newline).
enum MHD_Result drv_admin_http_answer(struct MHD_Connection *connection, drv_admin_response_t *response);
//  An error answer made on MHD's thread, without the loop (refused by the
//  request's head, or no room for its body).
enum MHD_Result drv_admin_http_refuse(struct MHD_Connection *connection, int status, const char *kind,
                                      const char *message, int retry_after_secs);

#endif
