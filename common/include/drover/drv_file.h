/*  drv_file — reading a whole file of bounded size (the config file, a Lua
    script_file), and writing a whole buffer to a descriptor. */
#ifndef DRV_FILE_H
#define DRV_FILE_H

#include <stddef.h>

//  The file's bytes, NUL-terminated (caller frees), with their count in
//  *size; or NULL with "PATH: cannot open: why", "PATH: read error" or
//  "PATH: larger than MAX bytes" in err.
char *drv_file_read(const char *path, size_t max, size_t *size, char *err, size_t errlen);

//  Writes all len bytes of data to fd, retrying short writes and EINTR.
//  Returns 0, or -1 with errno set (ENOSPC when a write wrote nothing).
int drv_file_write_all(int fd, const void *data, size_t len);

#endif
