/*  drv_time — clocks. Monotonic milliseconds for deadlines, wall milliseconds
    and RFC 3339 strings for what operators read. */
#ifndef DRV_TIME_H
#define DRV_TIME_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

int64_t drv_time_mono_ms(void);
int64_t drv_time_mono_us(void);
int64_t drv_time_wall_ms(void);
//  Wall clock nanoseconds since 1970 (observed_time_unix_nano).
int64_t drv_time_wall_ns(void);

//  Writes e.g. 2026-11-22T04:03:01.123Z; buf needs 25 bytes.
//  The CLOCK_REALTIME instant ms from now, for pthread_cond_timedwait.
struct timespec drv_time_realtime_in(int64_t ms);

void drv_time_rfc3339(int64_t wall_ms, char *buf, size_t size);

#endif
