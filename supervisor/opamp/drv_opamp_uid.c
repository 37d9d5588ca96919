/*  drv_opamp_uid — the agent's instance_uid: a UUIDv7 (RFC 9562: 48 bits
    of Unix milliseconds, version 7, 74 random bits) made on the first
    start and kept in instance_uid_file as its text form, so a restarted
    droverd is the same agent to the server. */
#include "drv_opamp_internal.h"

#include "drover/drv_file.h"
#include "drover/drv_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

void drv_opamp_uid_text(const uint8_t uid[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t at = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out[at++] = '-';
        }
        out[at++] = hex[uid[i] >> 4];
        out[at++] = hex[uid[i] & 15];
    }
    out[at] = 0;
}

static int s_parse(const char *text, uint8_t uid[16])
{
    int n = 0;
    for (const char *c = text; *c && *c != '\n' && n < 32; c++) {
        int v = *c >= '0' && *c <= '9'   ? *c - '0'
                : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
                : *c >= 'A' && *c <= 'F' ? *c - 'A' + 10
                                         : -1;
        if (v < 0) {
            if (*c == '-') {
                continue;
            }
            return -1;
        }
        uid[n / 2] = (uint8_t)(n % 2 ? uid[n / 2] | v : v << 4);
        n++;
    }
    return n == 32 ? 0 : -1;
}

int drv_opamp_uid_save(const char *path, const uint8_t uid[16], char *err, size_t errlen)
{
    char text[40], tmp[4200];
    drv_opamp_uid_text(uid, text);
    strcat(text, "\n");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || drv_file_write_all(fd, text, strlen(text)) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "engine.opamp.instance_uid_file %s: cannot write: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "engine.opamp.instance_uid_file %s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int drv_opamp_uid_load(const char *path, uint8_t uid[16], char *err, size_t errlen)
{
    size_t size;
    char why[600];
    char *text = drv_file_read(path, 4096, &size, why, sizeof why);
    if (text && s_parse(text, uid) == 0) {
        free(text);
        return 0;
    }
    if (text) {
        free(text);
        snprintf(err, errlen, "engine.opamp.instance_uid_file %s: not a UUID (delete it to make a new one)", path);
        return -1;
    }
    //  None yet: a new UUIDv7.
    uint64_t ms = (uint64_t)drv_time_wall_ms();
    if (getrandom(uid, 16, 0) != 16) {
        snprintf(err, errlen, "engine.opamp: no randomness for a new instance_uid: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; i < 6; i++) {
        uid[i] = (uint8_t)(ms >> (40 - 8 * i));
    }
    uid[6] = (uint8_t)(0x70 | (uid[6] & 0x0f)); // version 7
    uid[8] = (uint8_t)(0x80 | (uid[8] & 0x3f)); // variant 10
    return drv_opamp_uid_save(path, uid, err, errlen);
}
