/*  drv_host_devices — per device (drv_host.h): disks from /proc/diskstats
    (those that ever read or wrote: a never-used loop or ram device adds
    nothing but series) and network interfaces from /proc/net/dev (under
    another root, that of the host's PID 1: the host's interfaces, not the
    container's). */
#include "drv_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void s_counter(drv_host_point_fn *fn, void *arg, const char *name, const char *unit, const char *device,
                      const char *direction, long long value)
{
    drv_host_say(fn, arg, name, unit, DRV_HOST_COUNTER, false, 0, value, "device", device, "direction", direction,
                 NULL);
}

static void s_seconds(drv_host_point_fn *fn, void *arg, const char *name, const char *device, const char *direction,
                      long long ms)
{
    drv_host_say(fn, arg, name, "s", DRV_HOST_COUNTER, true, (double)ms / 1000.0, 0, "device", device,
                 direction ? "direction" : NULL, direction, NULL);
}

int drv_host_scrape_disk(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    char *text = drv_host_read(root, "/proc/diskstats", err, errlen);
    if (!text) {
        return -1;
    }
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char device[128];
        long long reads, rmerged, rsectors, rms, writes, wmerged, wsectors, wms, pending, io_ms, weighted_ms;
        if (sscanf(line, "%*u %*u %127s %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld", device, &reads,
                   &rmerged, &rsectors, &rms, &writes, &wmerged, &wsectors, &wms, &pending, &io_ms,
                   &weighted_ms) != 12 ||
            (reads == 0 && writes == 0)) {
            continue;
        }
        s_counter(fn, arg, "system.disk.io", "By", device, "read", rsectors * 512);
        s_counter(fn, arg, "system.disk.io", "By", device, "write", wsectors * 512);
        s_counter(fn, arg, "system.disk.operations", "{operation}", device, "read", reads);
        s_counter(fn, arg, "system.disk.operations", "{operation}", device, "write", writes);
        s_counter(fn, arg, "system.disk.merged", "{operation}", device, "read", rmerged);
        s_counter(fn, arg, "system.disk.merged", "{operation}", device, "write", wmerged);
        s_seconds(fn, arg, "system.disk.operation_time", device, "read", rms);
        s_seconds(fn, arg, "system.disk.operation_time", device, "write", wms);
        s_seconds(fn, arg, "system.disk.io_time", device, NULL, io_ms);
        s_seconds(fn, arg, "system.disk.weighted_io_time", device, NULL, weighted_ms);
        drv_host_say(fn, arg, "system.disk.pending_operations", "{operation}", DRV_HOST_UPDOWN, false, 0, pending,
                     "device", device, NULL);
    }
    free(text);
    return 0;
}

int drv_host_scrape_network(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    char *text = drv_host_read(root, strcmp(root, "/") ? "/proc/1/net/dev" : "/proc/net/dev", err, errlen);
    if (!text) {
        return -1;
    }
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char *colon = strchr(line, ':');
        char *end = strchr(line, '\n');
        if (!colon || (end && colon > end)) {
            continue; // the two heading lines
        }
        char device[128];
        const char *name = line + strspn(line, " ");
        snprintf(device, sizeof device, "%.*s", (int)(colon - name < 127 ? colon - name : 127), name);
        long long v[16];
        if (sscanf(colon + 1, "%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13],
                   &v[14], &v[15]) != 16) {
            continue;
        }
        //  receive: bytes packets errs drop ...; transmit from the ninth column
        s_counter(fn, arg, "system.network.io", "By", device, "receive", v[0]);
        s_counter(fn, arg, "system.network.io", "By", device, "transmit", v[8]);
        s_counter(fn, arg, "system.network.packets", "{packet}", device, "receive", v[1]);
        s_counter(fn, arg, "system.network.packets", "{packet}", device, "transmit", v[9]);
        s_counter(fn, arg, "system.network.errors", "{error}", device, "receive", v[2]);
        s_counter(fn, arg, "system.network.errors", "{error}", device, "transmit", v[10]);
        s_counter(fn, arg, "system.network.dropped", "{packet}", device, "receive", v[3]);
        s_counter(fn, arg, "system.network.dropped", "{packet}", device, "transmit", v[11]);
    }
    free(text);
    return 0;
}
