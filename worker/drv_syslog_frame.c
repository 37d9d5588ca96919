/*  drv_syslog_frame — see drv_syslog_frame.h. */
#include "drv_syslog_frame.h"

#include <string.h>

static bool s_line(drv_syslog_framer_t *f, const char *buf, size_t len, const char **msg, size_t *msg_len,
                   size_t *used)
{
    const char *nl = memchr(buf, '\n', len);
    if (f->skipping) {
        *used = nl ? (size_t)(nl - buf) + 1 : len;
        f->skipping = nl == NULL;
        return false;
    }
    if (!nl) {
        if (len >= DRV_SYSLOG_FRAME_MAX) {
            //  Too long for a message: what there is becomes one, the rest of
            //  the line is dropped.
            *msg = buf;
            *msg_len = DRV_SYSLOG_FRAME_MAX;
            *used = len;
            f->skipping = true;
            return true;
        }
        *used = 0;
        return false;
    }
    *msg = buf;
    *msg_len = (size_t)(nl - buf);
    *used = *msg_len + 1;
    return true;
}

bool drv_syslog_frame_next(drv_syslog_framer_t *f, const char *buf, size_t len, const char **msg, size_t *msg_len,
                           size_t *used)
{
    *used = 0;
    if (len == 0) {
        return false;
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
        return false; // the count is still arriving
    }
    if (i == 0 || i == 10 || buf[i] != ' ' || count == 0 || count > DRV_SYSLOG_FRAME_MAX) {
        f->framing = DRV_FRAMING_LINES; // not a count: a sender that frames by lines after all
        return s_line(f, buf, len, msg, msg_len, used);
    }
    if (len - i - 1 < count) {
        return false;
    }
    *msg = buf + i + 1;
    *msg_len = count;
    *used = i + 1 + count;
    return true;
}
