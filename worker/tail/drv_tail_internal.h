/*  drv_tail_internal — what drv_tail.c (the files followed, reading them)
    and drv_tail_scan.c (finding them) share. */
#ifndef DRV_TAIL_INTERNAL_H
#define DRV_TAIL_INTERNAL_H

#include "drv_checkpoint.h"
#include "drv_tail.h"
#include "drv_tail_index.h"

#include <sys/stat.h>

#define DRV_TAIL_FINGERPRINT_BYTES DRV_CHECKPOINT_FINGERPRINT_MAX // fewer while the file is shorter
#define DRV_TAIL_ROTATE_WAIT_MS                                                                                        \
    1000 // a file gone is let go this long after, at its end (a writer may not have moved on)

typedef struct {
    drv_tail_file_t pub; // first: the receiver's view
    char path[4096];
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
    bool scanned, started_before;
    int inotify_fd;
    char **watched; // by watch descriptor: the directory watched (for the names events give)
    size_t watched_cap;
    bool events_lost;      // the queue overflowed, or a watch went: the next scan looks at every name
    size_t followed;       // files a scan began to follow: at most FOLLOWS_PER_SCAN, the rest at the next
    int64_t scan_began_us; // mono
    int member_fd;         // this instance's membership (drv_checkpoint_join), or -1
    int rank, members;     // its place among the newest generation's instances (members 0: it reads nothing new)
};

//  drv_tail.c: the CRC32C of a file's first *bytes (0: as many as there
//  are, up to DRV_TAIL_FINGERPRINT_BYTES), *bytes set to those read.
uint32_t drv_tail_fingerprint(int fd, size_t *bytes);
//  The file's checkpoint saved now (what is settled): 0, or -1 (said in the log).
int drv_tail_save_file(drv_tail_t *self, file_t *file);
//  A followed file looked at again (seen: its stat by the scan's name,
//  NULL: fstat'd): deleted (gone), cut shorter or its first bytes changed
//  (read again from its start).
void drv_tail_check(file_t *file, const struct stat *seen);
//  drv_tail_scan.c: watches the globs' directories (inotify), and dir.
void drv_tail_watch(drv_tail_t *self);
//  Its watch descriptor, or -1.
int drv_tail_watch_dir(drv_tail_t *self, const char *dir);

#endif
