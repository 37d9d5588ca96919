/*  drv_host_proc — the kernel's own counters (drv_host.h): cpu time per
    CPU and state (/proc/stat), memory by state (/proc/meminfo), the load
    averages (/proc/loadavg), paging (/proc/swaps, /proc/vmstat) and
    processes (/proc/stat). */
#include "drv_host.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  The number after "\nkey" (or at the start) in text, or -1.
static int64_t s_field(const char *text, const char *key)
{
    size_t len = strlen(key);
    for (const char *at = text; at && *at; at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL) {
        if (!strncmp(at, key, len) && (at[len] == ' ' || at[len] == ':' || at[len] == '\t')) {
            return strtoll(at + len + 1 + strspn(at + len + 1, " :\t"), NULL, 10);
        }
    }
    return -1;
}

int drv_host_scrape_cpu(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    static const char *const states[] = {"user", "nice", "system", "idle", "wait", "interrupt", "softirq", "steal"};
    char *stat = drv_host_read(root, "/proc/stat", err, errlen);
    if (!stat) {
        return -1;
    }
    double hz = (double)sysconf(_SC_CLK_TCK);
    for (char *line = stat; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9') {
            continue; // the all-CPU line and the rest
        }
        char cpu[32];
        size_t len = strcspn(line, " ");
        snprintf(cpu, sizeof cpu, "%.*s", (int)(len < 31 ? len : 31), line);
        char *at = line + len;
        for (size_t s = 0; s < sizeof states / sizeof states[0]; s++) {
            char *end;
            unsigned long long ticks = strtoull(at, &end, 10);
            if (end == at) {
                break; // an older kernel: fewer columns
            }
            at = end;
            drv_host_say(fn, arg, "system.cpu.time", "s", DRV_HOST_COUNTER, true, (double)ticks / hz, 0, "cpu", cpu,
                         "state", states[s], NULL);
        }
    }
    free(stat);
    return 0;
}

int drv_host_scrape_memory(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    char *info = drv_host_read(root, "/proc/meminfo", err, errlen);
    if (!info) {
        return -1;
    }
    int64_t total = s_field(info, "MemTotal"), free_ = s_field(info, "MemFree"), buffers = s_field(info, "Buffers");
    int64_t cached = s_field(info, "Cached"), reclaimable = s_field(info, "SReclaimable");
    int64_t unreclaimable = s_field(info, "SUnreclaim");
    free(info);
    if (total < 0 || free_ < 0 || buffers < 0 || cached < 0) {
        snprintf(err, errlen, "/proc/meminfo: no MemTotal, MemFree, Buffers or Cached");
        return -1;
    }
    reclaimable = reclaimable < 0 ? 0 : reclaimable;
    unreclaimable = unreclaimable < 0 ? 0 : unreclaimable;
    //  The states add up to MemTotal (kB in the file).
    int64_t used = total - free_ - buffers - cached - reclaimable - unreclaimable;
    const struct {
        const char *state;
        int64_t kb;
    } states[] = {{"used", used < 0 ? 0 : used},
                  {"free", free_},
                  {"buffered", buffers},
                  {"cached", cached},
                  {"slab_reclaimable", reclaimable},
                  {"slab_unreclaimable", unreclaimable}};
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        drv_host_say(fn, arg, "system.memory.usage", "By", DRV_HOST_UPDOWN, false, 0, states[i].kb * 1024, "state",
                     states[i].state, NULL);
    }
    drv_host_say(fn, arg, "system.memory.limit", "By", DRV_HOST_UPDOWN, false, 0, total * 1024, NULL);
    return 0;
}

int drv_host_scrape_load(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    char *text = drv_host_read(root, "/proc/loadavg", err, errlen);
    if (!text) {
        return -1;
    }
    double load[3];
    int got = sscanf(text, "%lf %lf %lf", &load[0], &load[1], &load[2]);
    free(text);
    if (got != 3) {
        snprintf(err, errlen, "/proc/loadavg: not three load averages");
        return -1;
    }
    drv_host_say(fn, arg, "system.cpu.load_average.1m", "{thread}", DRV_HOST_GAUGE, true, load[0], 0, NULL);
    drv_host_say(fn, arg, "system.cpu.load_average.5m", "{thread}", DRV_HOST_GAUGE, true, load[1], 0, NULL);
    drv_host_say(fn, arg, "system.cpu.load_average.15m", "{thread}", DRV_HOST_GAUGE, true, load[2], 0, NULL);
    return 0;
}

int drv_host_scrape_paging(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    char *swaps = drv_host_read(root, "/proc/swaps", err, errlen);
    char *vmstat = swaps ? drv_host_read(root, "/proc/vmstat", err, errlen) : NULL;
    if (!vmstat) {
        free(swaps);
        return -1;
    }
    char *line = strchr(swaps, '\n'); // past the heading
    while (line && *++line) {
        char device[256], type[32];
        long long size, used;
        if (sscanf(line, "%255s %31s %lld %lld", device, type, &size, &used) == 4) {
            drv_host_say(fn, arg, "system.paging.usage", "By", DRV_HOST_UPDOWN, false, 0, used * 1024, "device", device,
                         "state", "used", NULL);
            drv_host_say(fn, arg, "system.paging.usage", "By", DRV_HOST_UPDOWN, false, 0, (size - used) * 1024,
                         "device", device, "state", "free", NULL);
        }
        line = strchr(line, '\n');
    }
    int64_t in = s_field(vmstat, "pswpin"), out = s_field(vmstat, "pswpout");
    int64_t pgin = s_field(vmstat, "pgpgin"), pgout = s_field(vmstat, "pgpgout");
    int64_t faults = s_field(vmstat, "pgfault"), major = s_field(vmstat, "pgmajfault");
    free(swaps);
    free(vmstat);
    if (in < 0 || out < 0 || pgin < 0 || pgout < 0 || faults < 0 || major < 0) {
        snprintf(err, errlen, "/proc/vmstat: no pswpin, pswpout, pgpgin, pgpgout, pgfault or pgmajfault");
        return -1;
    }
    const char *ops = "system.paging.operations", *unit = "{operation}";
    drv_host_say(fn, arg, ops, unit, DRV_HOST_COUNTER, false, 0, in, "direction", "page_in", "type", "major", NULL);
    drv_host_say(fn, arg, ops, unit, DRV_HOST_COUNTER, false, 0, out, "direction", "page_out", "type", "major", NULL);
    drv_host_say(fn, arg, ops, unit, DRV_HOST_COUNTER, false, 0, pgin, "direction", "page_in", "type", "minor", NULL);
    drv_host_say(fn, arg, ops, unit, DRV_HOST_COUNTER, false, 0, pgout, "direction", "page_out", "type", "minor", NULL);
    drv_host_say(fn, arg, "system.paging.faults", "{fault}", DRV_HOST_COUNTER, false, 0, major, "type", "major", NULL);
    drv_host_say(fn, arg, "system.paging.faults", "{fault}", DRV_HOST_COUNTER, false, 0, faults - major, "type",
                 "minor", NULL);
    return 0;
}

int drv_host_scrape_processes(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    char *stat = drv_host_read(root, "/proc/stat", err, errlen);
    if (!stat) {
        return -1;
    }
    int64_t running = s_field(stat, "procs_running"), blocked = s_field(stat, "procs_blocked");
    int64_t created = s_field(stat, "processes");
    free(stat);
    if (running < 0 || blocked < 0 || created < 0) {
        snprintf(err, errlen, "/proc/stat: no procs_running, procs_blocked or processes");
        return -1;
    }
    drv_host_say(fn, arg, "system.processes.count", "{process}", DRV_HOST_UPDOWN, false, 0, running, "status",
                 "running", NULL);
    drv_host_say(fn, arg, "system.processes.count", "{process}", DRV_HOST_UPDOWN, false, 0, blocked, "status",
                 "blocked", NULL);
    drv_host_say(fn, arg, "system.processes.created", "{process}", DRV_HOST_COUNTER, false, 0, created, NULL);
    return 0;
}
