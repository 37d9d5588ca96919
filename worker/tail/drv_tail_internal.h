/*  drv_tail_internal — what the tail's files share: drv_tail.c (the
    files followed, reading them), drv_tail_scan.c (finding them by the
    globs), drv_tail_checkpoints.c (and by their checkpoints),
    drv_tail_follow.c (beginning to follow one), drv_tail_watch.c
    (inotify). */
#ifndef DRV_TAIL_INTERNAL_H
#define DRV_TAIL_INTERNAL_H

#include "drv_checkpoint.h"
#include "drv_tail.h"
#include "drv_tail_index.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define DRV_TAIL_FINGERPRINT_BYTES DRV_CHECKPOINT_FINGERPRINT_MAX // fewer while the file is shorter
#define DRV_TAIL_ROTATE_WAIT_MS                                                                                        \
    1000 // a file gone is let go this long after, at its end (a writer may not have moved on)

typedef struct {
    drv_tail_file_t pub; // first: the receiver's view
    char path[4096];
    char origin[4096]; // where it was first followed (its checkpoint keeps it)
    int fd, lock_fd;
    char *buf; // what was read from pub.offset on, not taken
    size_t len, cap;
    bool skipping, skip_after; // dropping the rest of a cut line; to, once the cut line is taken
    int64_t settled;           // what the checkpoint may say
    int64_t dropped_to;        // dropped in no input up to here (drv_tail_drop): settled once no input is unsettled
    bool dirty;
    uint32_t fp, fp_bytes; // the fingerprint: CRC32C of the first fp_bytes
    bool seen;             // found by the last scan
    bool releasing;        // another instance's now: read no more, let go once settled
    int64_t gone_since_ms; // mono
    struct stat checked;   // as drv_tail_check last saw it
    struct stat seen_st;   // as the last scan found it by its name (when looked)
    int wd;                // its directory's inotify watch, or -1: no event will say it changed
    bool touched;          // an event named it since a scan last looked at it
    bool looked;           // this scan stat'd its name
} file_t;

struct drv_tail_t {
    drv_tail_config_t config;
    char dir[4096];
    void (*forget)(void *user);
    file_t **files;
    size_t count, cap;
    drv_tail_index_t index;   // the files by identity
    drv_tail_index_t by_path; // and by path (drv_tail_index_path, 0)
    drv_tail_file_t **views;  // drv_tail_files
    size_t views_cap;
    bool scanned;        // the checkpoints' pass is done (none waits for another instance)
    bool started_before; // the pipeline read files before (the marker), or this instance's first whole scan is done
    size_t waiting;      // checkpoints the last pass found held by another instance
    int inotify_fd;
    char **watched; // by watch descriptor: the directory watched (for the names events give)
    size_t watched_cap;
    bool events_lost;      // the queue overflowed, or a watch went: the next scan looks at every name
    size_t followed;       // files a scan began to follow: at most FOLLOWS_PER_SCAN, the rest at the next
    int64_t scan_began_us; // mono
    int member_fd;         // this instance's membership (drv_checkpoint_join), or -1
    int rank, members;     // its place among the newest generation's instances (members 0: it reads nothing new)
};

//  The directory part of a path (a copy in out).
static inline void drv_tail_dirname(const char *path, char *out, size_t len)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(out, len, "%s", dirname(copy));
}

//  The deepest directory of a glob without a wildcard (into dir).
static inline void drv_tail_fixed_dir(const char *pattern, char *dir, size_t len)
{
    drv_tail_dirname(pattern, dir, len);
    char *wild = strpbrk(dir, "*?[");
    if (wild) {
        *wild = 0;
        char *slash = strrchr(dir, '/');
        if (slash) {
            slash[slash == dir] = 0; // "/" stays itself
        }
    }
}

//  drv_tail.c: the CRC32C of a file's first *bytes (0: as many as there
//  are, up to DRV_TAIL_FINGERPRINT_BYTES), *bytes set to those read.
uint32_t drv_tail_fingerprint(int fd, size_t *bytes);
//  The file's checkpoint saved now (what is settled): 0, or -1 (said in the log).
int drv_tail_save_file(drv_tail_t *self, file_t *file);
//  A followed file looked at again (seen: its stat by the scan's name,
//  NULL: fstat'd): deleted (gone), cut shorter or its first bytes changed
//  (read again from its start).
void drv_tail_check(file_t *file, const struct stat *seen);

//  drv_tail_follow.c: true when the file is this instance's (its identity
//  hashed over the newest generation's instances); the file followed by
//  that identity, or NULL.
bool drv_tail_mine(const drv_tail_t *self, uint64_t dev, uint64_t ino);
//  True when an include glob matches path and no exclude glob does; when
//  an exclude glob does.
bool drv_tail_globbed(const drv_tail_t *self, const char *path);
bool drv_tail_excluded(const drv_tail_t *self, const char *path);
//  Where path's file must be once opened (docs/security.md): the real
//  directory of pattern's part without a wildcard, then the directories
//  its wildcards matched, as they are named (none of them a link). False
//  when that cannot be known.
bool drv_tail_expected_dir(const char *pattern, const char *path, char *out, size_t len);
//  The same for the include glob that matches path (none excluding it):
//  false when none does.
bool drv_tail_where(const drv_tail_t *self, const char *path, char *dir, size_t len);
file_t *drv_tail_known(drv_tail_t *self, uint64_t dev, uint64_t ino);
typedef enum { DRV_TAIL_FOLLOWED, DRV_TAIL_BUSY, DRV_TAIL_NOT } drv_tail_follow_t;
//  Starts following path (st: its stat) when its lock is free (BUSY:
//  another instance holds it): from its checkpoint when the file is the
//  one it names, else from its start (or its end, at the pipeline's first
//  start with start_at end). gone: no glob finds it. in_dir: the real
//  directory the file must be opened in (NULL: anywhere, a link its glob
//  names); link: path is a link allowed. origin: where it was first
//  followed (NULL: path; a checkpoint that names it says instead).
drv_tail_follow_t drv_tail_follow(drv_tail_t *self, const char *path, const struct stat *st, bool gone,
                                  const char *in_dir, bool link, const char *origin);

//  drv_tail_checkpoints.c: the pass over the checkpoints of files no glob
//  found: how many wait for another instance to let their file go.
size_t drv_tail_checkpoints(drv_tail_t *self);

//  drv_tail_watch.c: watches the globs' directories (inotify); dir too
//  (its watch descriptor, or -1); true while file's directory is watched
//  (an event will name it if it changes).
void drv_tail_watch(drv_tail_t *self);
int drv_tail_watch_dir(drv_tail_t *self, const char *dir);
bool drv_tail_watched(const drv_tail_t *self, const file_t *file);

#endif
