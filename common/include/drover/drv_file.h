/*  drv_file — reading a whole file of bounded size (the config file, a Lua
    script_file), writing a whole buffer to a descriptor, and the lock
    files a process holds while it lives. */
#ifndef DRV_FILE_H
#define DRV_FILE_H

#include <stdbool.h>
#include <stddef.h>

//  The file's bytes, NUL-terminated (caller frees), with their count in
//  *size; or NULL with "PATH: cannot open: why", "PATH: read error",
//  "PATH: larger than MAX bytes" or "PATH: not a regular file" in err.
//  Never blocks: the file is opened non-blocking and must be a regular file
//  (a FIFO renamed over a config file or named as a script would otherwise
//  hold the caller's loop for as long as nobody writes to it).
char *drv_file_read(const char *path, size_t max, size_t *size, char *err, size_t errlen);
//  0 when path is a regular file this process can open for reading (opened
//  non-blocking, then closed); -1 with "PATH: why" in err.
int drv_file_check_readable(const char *path, char *err, size_t errlen);

//  mkdir -p, each directory made 0700. 0, or -1 with "cannot create DIR: why" in err.
int drv_file_mkdirs(const char *path, char *err, size_t errlen);

//  Writes all len bytes of data to fd, retrying short writes and EINTR.
//  Returns 0, or -1 with errno set (ENOSPC when a write wrote nothing).
int drv_file_write_all(int fd, const void *data, size_t len);

//  A lock file that a process holds while it lives, and that others sweep
//  when nobody holds it (a dead holder's): dir/name, made locked before it
//  appears under its name (made as dir/joining.<pid>.<serial>.<time>,
//  flock'd, renamed), so that no sweeper ever finds a live holder's file
//  unlocked; joining files a dead process left, unheld and a minute old,
//  are removed on the way. It replaces a dead holder's file of that name,
//  never a live one's. The descriptor, or -1 with errno set (EWOULDBLOCK: a
//  live holder has it). A sweeper (drv_file_sweep_unheld) removes only a
//  file still under the name it locked; a holder whose file is no longer
//  under its name (drv_file_names false) makes it again.
int drv_file_lock_in(const char *dir, const char *name);
//  A sweeper's look at a lock file: 1 when a live holder has it, 0 when
//  nobody does (then removed if a minute old and still under its name:
//  younger, it may be a joiner's between making and locking it), -1 when
//  it cannot be opened (gone).
int drv_file_sweep_unheld(const char *path);
//  True when path names the file fd has open.
bool drv_file_names(const char *path, int fd);

#endif
