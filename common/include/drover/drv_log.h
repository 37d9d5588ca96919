/*  drv_log — one-line structured logs on stderr.
    Format: `TIME LEVEL component: message key=value ...`; the level comes from
    DROVER_LOG (debug|info|warn|error, default info). */
#ifndef DRV_LOG_H
#define DRV_LOG_H

#include <stddef.h>
#include <stdint.h>

enum { DRV_LOG_DEBUG = 0, DRV_LOG_INFO, DRV_LOG_WARN, DRV_LOG_ERROR };

//  Sets the component name printed on every line and reads DROVER_LOG.
void drv_log_init(const char *component);

void drv_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

//  Also hands each line written to sink (droverd's own telemetry,
//  docs/operations.md): its level, wall time, and the message after
//  "component: " (len bytes, no newline). NULL: none. The sink must not
//  log itself.
typedef void (*drv_log_sink_fn)(void *arg, int level, int64_t wall_ms, const char *message, size_t len);
void drv_log_sink(drv_log_sink_fn sink, void *arg);

#define drv_debug(...) drv_log_write(DRV_LOG_DEBUG, __VA_ARGS__)
#define drv_info(...) drv_log_write(DRV_LOG_INFO, __VA_ARGS__)
#define drv_warn(...) drv_log_write(DRV_LOG_WARN, __VA_ARGS__)
#define drv_error(...) drv_log_write(DRV_LOG_ERROR, __VA_ARGS__)

#endif
