/*  drv_kafka_claims — see drv_kafka_claims.h. */
#include "drv_kafka_claims.h"

#include "drover/drv_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct drv_kafka_claims_t {
    char dir[4096];
    char member[64]; // our member file's name
    int member_fd;   // locked while we want a share; -1 once left
    bool left;       // no share wanted any more: not joined again
    int *locks;      // by partition: the locked descriptor, or -1
    int32_t lock_count;
};

//  A group id as one file name: letters, digits, '-', '_' and a '.' not
//  first kept, the rest as %XX (a group id may hold anything).
static void s_escape(const char *from, char *to, size_t tolen)
{
    size_t used = 0;
    for (const unsigned char *c = (const unsigned char *)from; *c && used + 4 < tolen; c++) {
        bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
                     *c == '_' || (*c == '.' && c != (const unsigned char *)from);
        used += (size_t)snprintf(to + used, tolen - used, plain ? "%c" : "%%%02X", *c);
    }
    to[used] = '\0';
}

static int s_mkdir(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

//  Opens name under the claims' directory (made when create) and locks it
//  if nobody else holds it: its descriptor, or -1.
static int s_lock(const drv_kafka_claims_t *self, const char *name, bool create)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", self->dir, name);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

//  True when name under the claims' directory is the file fd has open.
static bool s_names(const drv_kafka_claims_t *self, const char *name, int fd)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", self->dir, name);
    return drv_file_names(path, fd);
}

//  Our member file, locked before it appears under its name: another
//  member never finds it unlocked and takes it for a dead one's. Made
//  again when it is gone from under its name (removed by hand, or swept by
//  a member that looked as it replaced a dead instance's with our pid).
static void s_join(drv_kafka_claims_t *self)
{
    if (self->left || s_names(self, self->member, self->member_fd)) {
        return;
    }
    if (self->member_fd >= 0) {
        close(self->member_fd);
    }
    self->member_fd = drv_file_lock_in(self->dir, self->member);
}

drv_kafka_claims_t *drv_kafka_claims_new(const char *run_dir, const char *group, const char *topic, char *err,
                                         size_t errlen)
{
    drv_kafka_claims_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    self->member_fd = -1;
    char escaped[800];
    s_escape(group, escaped, sizeof escaped);
    snprintf(self->dir, sizeof self->dir, "%s/kafka", run_dir);
    int rc = s_mkdir(self->dir);
    size_t used = strlen(self->dir);
    snprintf(self->dir + used, sizeof self->dir - used, "/%s", escaped);
    rc = rc ? rc : s_mkdir(self->dir);
    used = strlen(self->dir);
    snprintf(self->dir + used, sizeof self->dir - used, "/%s", topic); // topic names are file names (schema)
    rc = rc ? rc : s_mkdir(self->dir);
    if (rc != 0) {
        snprintf(err, errlen, "partition locks: cannot make %s: %s", self->dir, strerror(errno));
        free(self);
        return NULL;
    }
    snprintf(self->member, sizeof self->member, "member.%ld", (long)getpid());
    s_join(self);
    if (self->member_fd < 0) {
        snprintf(err, errlen, "partition locks: cannot lock %s/%s: %s", self->dir, self->member, strerror(errno));
        free(self);
        return NULL;
    }
    return self;
}

void drv_kafka_claims_leave(drv_kafka_claims_t *self)
{
    if (self->member_fd >= 0) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", self->dir, self->member);
        unlink(path); // before the lock goes: nobody counts a file we let go of
        close(self->member_fd);
        self->member_fd = -1;
    }
    self->left = true;
}

void drv_kafka_claims_destroy(drv_kafka_claims_t **self_p)
{
    drv_kafka_claims_t *self = *self_p;
    if (!self) {
        return;
    }
    drv_kafka_claims_leave(self);
    for (int32_t p = 0; p < self->lock_count; p++) {
        drv_kafka_claims_release(self, p);
    }
    free(self->locks);
    free(self);
    *self_p = NULL;
}

//  Members still wanting a share: their files locked. A file nobody locks
//  is a member that died: not counted, and removed once a minute old.
static int32_t s_members(drv_kafka_claims_t *self)
{
    DIR *dir = opendir(self->dir);
    if (!dir) {
        return 1;
    }
    int32_t members = 0;
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (strncmp(entry->d_name, "member.", 7) != 0) {
            continue;
        }
        if (!strcmp(entry->d_name, self->member)) {
            members += self->member_fd >= 0;
            continue;
        }
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", self->dir, entry->d_name);
        members += drv_file_sweep_unheld(path) == 1; // held: alive (gone meanwhile: not counted)
    }
    closedir(dir);
    return members;
}

int32_t drv_kafka_claims_share(drv_kafka_claims_t *self, int32_t count)
{
    if (self->left) {
        return 0; // gives every partition back
    }
    s_join(self);
    int32_t members = s_members(self);
    members = members > 0 ? members : 1;
    return (count + members - 1) / members;
}

bool drv_kafka_claims_held(const drv_kafka_claims_t *self, int32_t partition)
{
    return partition >= 0 && partition < self->lock_count && self->locks[partition] >= 0;
}

bool drv_kafka_claims_take(drv_kafka_claims_t *self, int32_t partition)
{
    if (partition < 0 || drv_kafka_claims_held(self, partition)) {
        return partition >= 0;
    }
    if (partition >= self->lock_count) {
        int32_t count = partition + 1;
        int *grown = realloc(self->locks, (size_t)count * sizeof *grown);
        if (!grown) {
            return false;
        }
        for (int32_t p = self->lock_count; p < count; p++) {
            grown[p] = -1;
        }
        self->locks = grown;
        self->lock_count = count;
    }
    char name[32];
    snprintf(name, sizeof name, "%d.lock", (int)partition);
    self->locks[partition] = s_lock(self, name, true);
    return self->locks[partition] >= 0;
}

void drv_kafka_claims_release(drv_kafka_claims_t *self, int32_t partition)
{
    if (drv_kafka_claims_held(self, partition)) {
        close(self->locks[partition]); // the lock goes with it; the file stays (unlinking races a taker)
        self->locks[partition] = -1;
    }
}
