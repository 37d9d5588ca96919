/*  drv_version — the version every program reports. One function in a file
    of its own (common/src/drv_version.c), so that a build of the same
    source under another version (tests/CMakeLists.txt: the binaries an
    upgrade test installs over the first) needs only that file again. */
#ifndef DRV_VERSION_H
#define DRV_VERSION_H

const char *drv_version(void);

#endif
