/*  drv_console — the web console (GET /ui): console.html, compiled into
    droverd by scripts/embed.cmake, so nothing is fetched from elsewhere. */
#ifndef DRV_CONSOLE_H
#define DRV_CONSOLE_H

#include <stddef.h>

extern const char drv_console_html[];
extern const size_t drv_console_html_len;

#endif
