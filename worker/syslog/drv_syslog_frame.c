/*  drv_syslog_frame — see drv_syslog_frame.h. */
#include "drv_syslog_frame.h"

#include <string.h>

static size_t s_max(const drv_syslog_framer_t *f)
{
    return f->max ? f->max : DRV_SYSLOG_FRAME_MAX;
}

static drv_frame_t s_line(drv_syslog_framer_t *f, const char *buf, size_t len, const char **msg, size_t *msg_len,
                          size_t *used)
{
    size_t look = len < s_max(f) + 1 ? len : s_max(f) + 1;
    const char *nl = memchr(buf, '\n', look);
    if (!nl) {
        if (len > s_max(f)) {
            *msg_len = s_max(f) + 1; // all that is known
            return DRV_FRAME_TOO_LONG;
        }
        return DRV_FRAME_MORE;
    }
    *msg = buf;
    *msg_len = (size_t)(nl - buf);
    *used = *msg_len + 1;
    return DRV_FRAME_MESSAGE;
}

drv_frame_t drv_syslog_frame_next(drv_syslog_framer_t *f, const char *buf, size_t len, const char **msg,
                                  size_t *msg_len, size_t *used)
{
    *used = 0;
    if (len == 0) {
        return DRV_FRAME_MORE;
    }
    if (f->framing == DRV_FRAMING_UNKNOWN) {
        f->framing = buf[0] >= '1' && buf[0] <= '9' ? DRV_FRAMING_OCTETS : DRV_FRAMING_LINES;
    }
    if (f->framing == DRV_FRAMING_LINES) {
        return s_line(f, buf, len, msg, msg_len, used);
    }
    size_t count = 0, i = 0;
    while (i < len && i < 10 && buf[i] >= '0' && buf[i] <= '9') {
        count = count * 10 + (size_t)(buf[i] - '0');
        i++;
    }
    if (i == len && i < 10) {
        return DRV_FRAME_MORE; // the count is still arriving
    }
    if (i == 0 || i == 10 || buf[i] != ' ' || count == 0) {
        f->framing = DRV_FRAMING_LINES; // not a count: a sender that frames by lines after all
        return s_line(f, buf, len, msg, msg_len, used);
    }
    if (count > s_max(f)) {
        *msg_len = count;
        return DRV_FRAME_TOO_LONG;
    }
    if (len - i - 1 < count) {
        return DRV_FRAME_MORE;
    }
    *msg = buf + i + 1;
    *msg_len = count;
    *used = i + 1 + count;
    return DRV_FRAME_MESSAGE;
}
