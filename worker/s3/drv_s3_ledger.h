/*  drv_s3_ledger — the multipart uploads an exporter:s3 instance has
    open, written down as they begin and end (docs/s3.md, "What settles"),
    so that the instance after one that was SIGKILLed aborts the uploads it
    left: no parts are left to bill, whatever the bucket's lifecycle rule.
    Each process keeps its own file, BASE.uploads.PID, locked (flock) for
    as long as it runs: a file another process can lock is a dead one's,
    and is adopted (its open uploads handed to the caller and written into
    the adopter's own file). Two generations of a core running side by
    side in a replace never touch each other's uploads. A process that
    ends with nothing open removes its file. */
#ifndef DRV_S3_LEDGER_H
#define DRV_S3_LEDGER_H

#include <limits.h>
#include <stddef.h>

typedef struct {
    int fd; // -1: no ledger (nowhere to keep it)
    char path[PATH_MAX];
    long open; // uploads begun and not ended, as written here
} drv_s3_ledger_t;

//  This process's ledger beside base (a path without its suffix). 0, or
//  -1 with why (fd is then -1 and the calls below do nothing).
int drv_s3_ledger_open(drv_s3_ledger_t *self, const char *base, char *why, size_t whylen);
//  The uploads dead processes of base left open, each told to found (key,
//  upload id) and written into this ledger, their files removed.
void drv_s3_ledger_adopt(drv_s3_ledger_t *self, const char *base,
                         void (*found)(void *arg, const char *key, const char *upload_id), void *arg);
//  An upload began under key, or ended (completed, or aborted).
void drv_s3_ledger_begun(drv_s3_ledger_t *self, const char *key, const char *upload_id);
void drv_s3_ledger_ended(drv_s3_ledger_t *self, const char *upload_id);
//  The file goes when nothing is open; else it stays for the next to adopt.
void drv_s3_ledger_close(drv_s3_ledger_t *self);

#endif
