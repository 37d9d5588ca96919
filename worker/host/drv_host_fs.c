/*  drv_host_fs — mounted filesystems (drv_host.h): the mount table
    (/proc/self/mountinfo; under another root, that of the host's PID 1),
    each mount that is not virtual or remote measured with statvfs(2)
    under the root. Virtual ones (proc, sysfs, cgroup, tmpfs, overlay, …)
    say nothing of a disk; remote and FUSE ones could hang the call on a
    server that is gone, and the call runs on the instance's loop. "/" is
    measured whatever its type. One point set per mountpoint (a mount over
    another hides it). */
#include "drv_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

static const char *const s_skipped =
    " proc sysfs cgroup cgroup2 devpts devtmpfs mqueue debugfs tracefs securityfs pstore bpf configfs fusectl "
    "hugetlbfs autofs binfmt_misc nsfs rpc_pipefs selinuxfs efivarfs ramfs squashfs overlay tmpfs nfs nfs4 cifs "
    "smb3 smbfs ceph 9p fuse ";

static bool s_skip(const char *type, const char *mountpoint)
{
    char word[80];
    snprintf(word, sizeof word, " %s ", type);
    return strcmp(mountpoint, "/") && (strstr(s_skipped, word) || !strncmp(type, "fuse.", 5));
}

//  mountinfo's octal escapes (\040 for a space) undone in place.
static void s_unescape(char *text)
{
    char *out = text;
    for (char *in = text; *in; in++) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' &&
            in[3] <= '7') {
            *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
            in += 3;
        } else {
            *out++ = *in;
        }
    }
    *out = 0;
}

typedef struct {
    char mountpoint[1024], device[512], type[64], mode[4];
} mount_t;

//  One line of mountinfo: false when it is not one.
static bool s_parse(char *line, mount_t *m)
{
    char *fields[64];
    int n = 0;
    for (char *save, *f = strtok_r(line, " ", &save); f && n < 64; f = strtok_r(NULL, " ", &save)) {
        fields[n++] = f;
    }
    int dash = 6;
    while (dash < n && strcmp(fields[dash], "-")) {
        dash++;
    }
    if (n < 10 || dash + 2 >= n) {
        return false;
    }
    s_unescape(fields[4]);
    s_unescape(fields[dash + 2]);
    snprintf(m->mountpoint, sizeof m->mountpoint, "%s", fields[4]);
    snprintf(m->type, sizeof m->type, "%s", fields[dash + 1]);
    snprintf(m->device, sizeof m->device, "%s", fields[dash + 2]);
    snprintf(m->mode, sizeof m->mode, "%s",
             strncmp(fields[5], "ro", 2) || (fields[5][2] && fields[5][2] != ',') ? "rw" : "ro");
    return true;
}

static void s_say(drv_host_point_fn *fn, void *arg, const char *name, const char *unit, const mount_t *m,
                  const char *state, unsigned long long value)
{
    drv_host_say(fn, arg, name, unit, DRV_HOST_UPDOWN, false, 0, (int64_t)value, "device", m->device, "mode", m->mode,
                 "mountpoint", m->mountpoint, "type", m->type, "state", state, NULL);
}

int drv_host_scrape_filesystem(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    bool host = strcmp(root, "/") != 0;
    char *text = drv_host_read(root, host ? "/proc/1/mountinfo" : "/proc/self/mountinfo", err, errlen);
    if (!text) {
        return -1;
    }
    //  The last mount of each mountpoint is the one seen there.
    size_t count = 0, cap = 64;
    mount_t *mounts = malloc(cap * sizeof *mounts);
    for (char *save, *line = strtok_r(text, "\n", &save); line && mounts; line = strtok_r(NULL, "\n", &save)) {
        mount_t m;
        if (!s_parse(line, &m) || s_skip(m.type, m.mountpoint)) {
            continue;
        }
        size_t i = 0;
        while (i < count && strcmp(mounts[i].mountpoint, m.mountpoint)) {
            i++;
        }
        if (i == count && count == cap) {
            mount_t *grown = cap < 65536 ? realloc(mounts, cap * 2 * sizeof *mounts) : NULL;
            if (!grown) {
                break;
            }
            mounts = grown;
            cap *= 2;
        }
        mounts[i] = m;
        count += i == count;
    }
    free(text);
    for (size_t i = 0; mounts && i < count; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s%s", host ? root : "", mounts[i].mountpoint);
        struct statvfs fs;
        if (statvfs(path, &fs) != 0 || fs.f_blocks == 0) {
            continue; // gone since, or nothing to measure
        }
        unsigned long long unit = fs.f_frsize ? fs.f_frsize : fs.f_bsize;
        s_say(fn, arg, "system.filesystem.usage", "By", &mounts[i], "used", (fs.f_blocks - fs.f_bfree) * unit);
        s_say(fn, arg, "system.filesystem.usage", "By", &mounts[i], "free", fs.f_bavail * unit);
        s_say(fn, arg, "system.filesystem.usage", "By", &mounts[i], "reserved", (fs.f_bfree - fs.f_bavail) * unit);
        if (fs.f_files) {
            s_say(fn, arg, "system.filesystem.inodes.usage", "{inode}", &mounts[i], "used", fs.f_files - fs.f_ffree);
            s_say(fn, arg, "system.filesystem.inodes.usage", "{inode}", &mounts[i], "free", fs.f_ffree);
        }
    }
    free(mounts);
    return 0;
}
