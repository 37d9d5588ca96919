/*  drv_s3_key — see drv_s3_key.h. */
#include "drv_s3_key.h"
#include "drv_schemas.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/time.h>
#include <unistd.h>

int drv_s3_key_make(const char *template, const drv_s3_key_fields_t *fields, char *out, size_t outlen)
{
    //  The fields first (their text may hold % and is not strftime's),
    //  then the time conversions of what is left, part by part.
    size_t at = 0;
    struct tm tm;
    gmtime_r(&fields->when, &tm);
    char part[512];
    for (const char *c = template; *c;) {
        size_t flen = 0;
        int field = *c == '{' ? drv_s3_key_field(c, &flen) : -1;
        int n = 0;
        if (field >= 0) {
            char seq[24];
            snprintf(seq, sizeof seq, "%" PRIu64, fields->seq);
            const char *value = field == 0   ? fields->signal
                                : field == 1 ? fields->instance
                                : field == 2 ? seq
                                             : fields->ext;
            n = snprintf(out + at, outlen - at, "%s", value);
            c += flen;
        } else {
            size_t len = strcspn(c + 1, "{") + 1;
            if (len >= sizeof part) {
                return -1;
            }
            memcpy(part, c, len);
            part[len] = 0;
            n = (int)strftime(out + at, outlen - at, part, &tm);
            if (n == 0) {
                return -1;
            }
            c += len;
        }
        if (n < 0 || (size_t)n >= outlen - at) {
            return -1;
        }
        at += (size_t)n;
    }
    return at > 0 ? 0 : -1;
}

int drv_s3_key_next_seq(const char *path, uint64_t *seq, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX) != 0) {
        snprintf(err, errlen, "%s: flock: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    char text[32] = {0};
    ssize_t got = pread(fd, text, sizeof text - 1, 0);
    uint64_t last = 0;
    if (got > 0) {
        last = strtoull(text, NULL, 10);
    } else {
        struct timeval now;
        gettimeofday(&now, NULL);
        last = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_usec;
    }
    *seq = last + 1;
    int len = snprintf(text, sizeof text, "%" PRIu64 "\n", *seq);
    int rc = pwrite(fd, text, (size_t)len, 0) == len && ftruncate(fd, len) == 0 ? 0 : -1;
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    }
    close(fd); // the lock with it
    return rc;
}
