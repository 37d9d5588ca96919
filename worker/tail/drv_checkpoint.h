/*  drv_checkpoint — where a pull source stands in a file it follows, kept
    under {buffer_dir}/{group}/{pipeline}/checkpoints/ (docs/operations.md,
    "Reading files"): one JSON file per followed file, named by its device
    and inode, replaced whole (written beside, then renamed), holding its
    path, the path it was first followed under (origin: a file a rotation
    renamed keeps what that name said, its pod), the fingerprint of its
    first bytes and the offset up to which what was read is settled (a
    path that is not UTF-8 as path_hex, origin_hex; a checkpoint with a
    field out of range is set aside, docs/security.md).
    Beside it a lock file: the instance that
    follows the file holds its flock, so that one instance at a time reads
    it — across cores, and across generations during a replace (the next
    takes the lock once the draining one has settled and exited).
    A `started` marker says the pipeline read files before: files first
    seen then are read from their beginning whatever start_at says. */
#ifndef DRV_CHECKPOINT_H
#define DRV_CHECKPOINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DRV_CHECKPOINT_FINGERPRINT_MAX 1024 // a file is known by at most this many of its first bytes

typedef struct {
    uint64_t dev, ino;
    uint32_t fingerprint_bytes; // how many first bytes the fingerprint covers
    uint32_t fingerprint;       // their CRC32C
    int64_t offset;             // settled up to here
    char path[4096];            // where it was last seen
    char origin[4096];          // where it was first followed (a rotation renames it; its attributes stay)
    int64_t saved_ns;           // loaded: when it was saved (the checkpoint file's mtime), else 0
} drv_checkpoint_t;

//  The directory for a pipeline's checkpoints, made when missing: 0, or -1 with err.
int drv_checkpoint_dir(const char *root, const char *group, const char *pipeline, char *dir, size_t dirlen, char *err,
                       size_t errlen);
//  Takes the file's lock without waiting: its descriptor (closing it lets
//  go), or -1 when another instance holds it (or it cannot be made).
int drv_checkpoint_lock(const char *dir, uint64_t dev, uint64_t ino);
//  Reads the file's checkpoint: true with it, false when there is none (or it is unreadable).
bool drv_checkpoint_load(const char *dir, uint64_t dev, uint64_t ino, drv_checkpoint_t *out);
//  A checkpoint's text read (every field range-checked): false with why.
bool drv_checkpoint_parse(const char *text, size_t len, drv_checkpoint_t *out, char *why, size_t whylen);
//  Its text as saved (caller frees), or NULL when out of memory.
char *drv_checkpoint_text(const drv_checkpoint_t *checkpoint);
//  Replaces it: 0, or -1 with err.
int drv_checkpoint_save(const char *dir, const drv_checkpoint_t *checkpoint, char *err, size_t errlen);
//  Deletes it and its lock (the file is gone, or was read to its end and is followed no more).
void drv_checkpoint_forget(const char *dir, uint64_t dev, uint64_t ino);
//  Each checkpoint in the directory, for files no glob found (renamed
//  away while nobody ran): calls fn with it until fn returns false. skip
//  (NULL: none) passes over a file's checkpoint by its identity before it
//  is read (one followed already: thousands of them cost no read).
void drv_checkpoint_each(const char *dir, bool (*skip)(void *arg, uint64_t dev, uint64_t ino),
                         bool (*fn)(void *arg, const drv_checkpoint_t *checkpoint), void *arg);
//  A checkpoint by name (a journal's cursor, `journald.NODE`): its lock
//  (as above), its JSON document (NULL: none, or unreadable), replacing it
//  (0, or -1 with err).
int drv_checkpoint_lock_name(const char *dir, const char *name);
json_t *drv_checkpoint_load_name(const char *dir, const char *name);
int drv_checkpoint_save_name(const char *dir, const char *name, const json_t *doc, char *err, size_t errlen);
//  Membership: which instances share the reading. An instance joins with
//  its generation and core (a `member.GEN.CORE` lock it holds while it
//  lives): the descriptor, or -1 (tried again later). rank gives, among the
//  live members of the newest generation, this one's place (sorted by
//  core) and how many they are: false when it is not of the newest (a
//  generation draining while the next runs reads nothing new).
int drv_checkpoint_join(const char *dir, int64_t generation, int core);
//  True while fd (from join) is still the member file under its name:
//  false once it was removed from under it (then joined again).
bool drv_checkpoint_joined(const char *dir, int64_t generation, int core, int fd);
bool drv_checkpoint_rank(const char *dir, int64_t generation, int core, int *rank, int *count);
//  True when the pipeline read files before (the marker is there); mark makes it so.
bool drv_checkpoint_started(const char *dir);
void drv_checkpoint_mark_started(const char *dir);

#endif
