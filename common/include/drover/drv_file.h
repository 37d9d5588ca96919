/*  drv_file — reading a whole file of bounded size (the config file, a Lua
    script_file), and writing a whole buffer to a descriptor. */
#ifndef DRV_FILE_H
#define DRV_FILE_H

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

#endif
