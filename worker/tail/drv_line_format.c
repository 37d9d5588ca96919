/*  drv_line_format — see the header. */
#include "drv_line_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  n digits at text as a number, or -1.
static int64_t s_digits(const char *text, size_t n)
{
    int64_t value = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] < '0' || text[i] > '9') {
            return -1;
        }
        value = value * 10 + (text[i] - '0');
    }
    return value;
}

int64_t drv_rfc3339_ns(const char *t, size_t len)
{
    if (len < 20 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || t[13] != ':' ||
        t[16] != ':') {
        return -1;
    }
    int64_t year = s_digits(t, 4), month = s_digits(t + 5, 2), day = s_digits(t + 8, 2), hour = s_digits(t + 11, 2),
            minute = s_digits(t + 14, 2), second = s_digits(t + 17, 2);
    if (year < 1970 || year > 2261 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
        minute < 0 || minute > 59 || second < 0 || second > 60) {
        return -1;
    }
    size_t at = 19;
    int64_t nanos = 0;
    if (t[at] == '.') {
        size_t digits = 0;
        for (at++; at < len && t[at] >= '0' && t[at] <= '9'; at++, digits++) {
            nanos = digits < 9 ? nanos * 10 + (t[at] - '0') : nanos;
        }
        if (digits == 0) {
            return -1;
        }
        for (; digits < 9; digits++) {
            nanos *= 10;
        }
    }
    int64_t offset = 0;
    if (at < len && (t[at] == 'Z' || t[at] == 'z')) {
        at++;
    } else if (at + 6 <= len && (t[at] == '+' || t[at] == '-') && t[at + 3] == ':') {
        int64_t h = s_digits(t + at + 1, 2), m = s_digits(t + at + 4, 2);
        if (h < 0 || m < 0) {
            return -1;
        }
        offset = (t[at] == '+' ? 1 : -1) * (h * 3600 + m * 60);
        at += 6;
    } else {
        return -1;
    }
    if (at != len) {
        return -1;
    }
    struct tm tm = {.tm_year = (int)year - 1900,
                    .tm_mon = (int)month - 1,
                    .tm_mday = (int)day,
                    .tm_hour = (int)hour,
                    .tm_min = (int)minute,
                    .tm_sec = (int)second};
    int64_t secs = (int64_t)timegm(&tm) - offset; // nanoseconds since 1970 fit in 63 bits until 2262
    return secs < 0 ? -1 : secs * 1000000000 + nanos;
}

bool drv_cri_parse(const char *line, size_t len, drv_cri_line_t *out)
{
    const char *end = line + len, *p = line;
    const char *parts[3];
    size_t lens[3];
    for (int i = 0; i < 3; i++) {
        const char *space = memchr(p, ' ', (size_t)(end - p));
        if (!space) {
            return false;
        }
        parts[i] = p;
        lens[i] = (size_t)(space - p);
        p = space + 1;
    }
    int64_t time_ns = drv_rfc3339_ns(parts[0], lens[0]);
    if (time_ns < 0 || lens[2] == 0 || (parts[2][0] != 'P' && parts[2][0] != 'F')) {
        return false;
    }
    *out = (drv_cri_line_t){.time_ns = time_ns,
                            .stream = parts[1],
                            .stream_len = lens[1],
                            .message = p,
                            .message_len = (size_t)(end - p),
                            .partial = parts[2][0] == 'P'};
    return true;
}

bool drv_kube_path(const char *path, drv_kube_path_t *out)
{
    //  The last three components: NAMESPACE_POD_UID, CONTAINER, N.log.
    const char *slash[3] = {NULL, NULL, NULL};
    for (const char *p = path + strlen(path); p > path && !slash[2];) {
        p--;
        if (*p == '/') {
            slash[slash[0] ? slash[1] ? 2 : 1 : 0] = p;
        }
    }
    if (!slash[2]) {
        return false;
    }
    const char *file = slash[0] + 1, *container = slash[1] + 1, *pod_dir = slash[2] + 1;
    size_t container_len = (size_t)(slash[0] - container), pod_len = (size_t)(slash[1] - pod_dir);
    char *dot;
    long restart = strtol(file, &dot, 10);
    bool log = !strcmp(dot, ".log") || !strncmp(dot, ".log.", 5); // N.log, or rotated: N.log.<time>
    if (dot == file || !log || restart < 0 || container_len == 0 || container_len >= sizeof out->container) {
        return false;
    }
    const char *first = memchr(pod_dir, '_', pod_len);
    const char *last = NULL;
    for (const char *p = pod_dir + pod_len; p > pod_dir; p--) {
        if (p[-1] == '_') {
            last = p - 1;
            break;
        }
    }
    if (!first || !last || last <= first + 1 || (size_t)(first - pod_dir) >= sizeof out->namespace_ ||
        (size_t)(pod_dir + pod_len - last - 1) >= sizeof out->uid || (size_t)(last - first - 1) >= sizeof out->pod) {
        return false;
    }
    snprintf(out->namespace_, sizeof out->namespace_, "%.*s", (int)(first - pod_dir), pod_dir);
    snprintf(out->pod, sizeof out->pod, "%.*s", (int)(last - first - 1), first + 1);
    snprintf(out->uid, sizeof out->uid, "%.*s", (int)(pod_dir + pod_len - last - 1), last + 1);
    snprintf(out->container, sizeof out->container, "%.*s", (int)container_len, container);
    out->restart_count = restart;
    return out->uid[0] != 0;
}
