/*  drv_version — see drv_version.h. DROVER_VERSION comes from the build
    (CMakeLists.txt: -DDROVER_VERSION=..., else the project's version). */
#include "drover/drv_version.h"

const char *drv_version(void)
{
    return DROVER_VERSION;
}
