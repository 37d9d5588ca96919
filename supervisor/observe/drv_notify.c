/*  drv_notify — tells a service manager how droverd is doing, through
    libsystemd's sd_notify (a datagram to $NOTIFY_SOCKET; nothing happens when
    it is unset, as in a container).

    READY=1   once startup has settled: no pipeline is still being created or
              updated (each is running, degraded or failed), so
              `systemctl start` returns when the pipelines from the config
              file are up, and does not hang on one that cannot start
    RELOADING=1  on SIGHUP (with MONOTONIC_USEC, for Type=notify-reload);
              READY=1 again once the reload's rollouts have settled
    STOPPING=1   on SIGTERM/SIGINT
    WATCHDOG=1   every half of $WATCHDOG_USEC, from the main loop, so a
              wedged loop is noticed by systemd (WatchdogSec=)
    STATUS=   a one-line summary with each of the above */
#include "drv_notify.h"
#include "drv_registry.h"
#include "drv_status.h"

#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

static void s_notify(const char *state)
{
    int rc = sd_notify(0, state);
    if (rc < 0) {
        drv_warn("sd_notify failed state=\"%.40s\" reason=\"%s\"", state, strerror(-rc));
    } else if (rc > 0) {
        drv_debug("sd_notify sent state=\"%.40s\"", state);
    }
}

struct drv_notify_t {
    bool ready_sent;          // READY=1 sent since start or the last RELOADING=1
    int64_t watchdog_ms;      // ping interval (half of WATCHDOG_USEC), 0: none
    int64_t next_watchdog_ms; // mono
};

drv_notify_t *drv_notify_new(void)
{
    drv_notify_t *self = calloc(1, sizeof *self);
    if (!self) {
        abort();
    }
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        self->watchdog_ms = (int64_t)(usec / 2000) > 0 ? (int64_t)(usec / 2000) : 1;
        self->next_watchdog_ms = drv_time_mono_ms();
        drv_info("systemd watchdog enabled interval_ms=%lld", (long long)self->watchdog_ms);
    }
    return self;
}

void drv_notify_destroy(drv_notify_t **self_p)
{
    if (self_p && *self_p) {
        free(*self_p);
        *self_p = NULL;
    }
}

//  Startup (or a reload) has settled: nothing is pending or updating.
static bool s_settled(drv_engine_t *engine, int *running, int *not_running)
{
    *running = *not_running = 0;
    size_t count;
    drv_pipeline_t **all = drv_registry_pipelines(engine, &count);
    for (size_t k = 0; k < count; k++) {
        drv_pipeline_t *p = all[k];
        const char *phase = drv_status_phase(p);
        if (!strcmp(phase, "pending") || !strcmp(phase, "updating")) {
            free(all);
            return false;
        }
        if (!strcmp(phase, "running")) {
            (*running)++;
        } else if (strcmp(phase, "stopped")) {
            (*not_running)++;
        }
    }
    free(all);
    return true;
}

int64_t drv_notify_tick(drv_notify_t *self, drv_engine_t *engine)
{
    int64_t now = drv_time_mono_ms();
    int running, not_running;
    if (!self->ready_sent && !engine->shutting_down && s_settled(engine, &running, &not_running)) {
        char state[200];
        snprintf(state, sizeof state, "READY=1\nSTATUS=%d pipelines running, %d degraded or failed", running,
                 not_running);
        s_notify(state);
        self->ready_sent = true;
    }
    if (self->watchdog_ms <= 0) {
        return -1;
    }
    if (now >= self->next_watchdog_ms) {
        s_notify("WATCHDOG=1");
        self->next_watchdog_ms = now + self->watchdog_ms;
    }
    return self->next_watchdog_ms - now;
}

void drv_notify_reloading(drv_notify_t *self, drv_engine_t *engine)
{
    char state[100];
    snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%lld\nSTATUS=reloading %s",
             (long long)drv_time_mono_us(), engine->config->path);
    s_notify(state);
    self->ready_sent = false;
}

void drv_notify_stopping(drv_notify_t *self)
{
    (void)self;
    s_notify("STOPPING=1\nSTATUS=draining pipelines");
}
