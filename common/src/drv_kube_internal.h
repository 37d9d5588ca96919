/*  drv_kube_internal — what drv_kube.c (the client) offers drv_kube_watch.c. */
#ifndef DRV_KUBE_INTERNAL_H
#define DRV_KUBE_INTERNAL_H

#include "drover/drv_kube.h"

#include <curl/curl.h>

//  An easy handle for a GET of path on the server, with the token read
//  now and the CA set; *headers to be freed with it. NULL with err.
CURL *drv_kube_easy(drv_kube_t *self, const char *path, struct curl_slist **headers, char *err, size_t errlen);

#endif
