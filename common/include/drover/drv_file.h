/*  drv_file — reading a whole file of bounded size (the config file, a Lua
    script_file). */
#ifndef DRV_FILE_H
#define DRV_FILE_H

#include <stddef.h>

//  The file's bytes, NUL-terminated (caller frees), with their count in
//  *size; or NULL with "PATH: cannot open: why", "PATH: read error" or
//  "PATH: larger than MAX bytes" in err.
char *drv_file_read(const char *path, size_t max, size_t *size, char *err, size_t errlen);

#endif
