/*  drv_host — the host's figures from /proc and /sys under a root
    (receiver:hostmetrics; docs/operations.md, "Host metrics"): each
    scraper reads its files and says each data point, named as
    OpenTelemetry's semantic conventions for system metrics name them.
    Nothing here allocates: points are said to a callback as they are
    read, their strings valid for the call. */
#ifndef DRV_HOST_H
#define DRV_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    DRV_HOST_CPU = 1 << 0,
    DRV_HOST_MEMORY = 1 << 1,
    DRV_HOST_LOAD = 1 << 2,
    DRV_HOST_FILESYSTEM = 1 << 3,
    DRV_HOST_DISK = 1 << 4,
    DRV_HOST_NETWORK = 1 << 5,
    DRV_HOST_PAGING = 1 << 6,
    DRV_HOST_PROCESSES = 1 << 7,
};
#define DRV_HOST_SCRAPERS "cpu memory load filesystem disk network paging processes"
#define DRV_HOST_MAX_ATTRS 5

typedef struct {
    const char *name; // "system.cpu.time"
    const char *unit; // "s", "By", "{operation}"
    bool sum;         // a cumulative sum since boot; else a gauge
    bool monotonic;   // a sum that only grows
    int attrs;
    const char *keys[DRV_HOST_MAX_ATTRS];
    const char *values[DRV_HOST_MAX_ATTRS];
    bool is_double;
    double dvalue;
    int64_t ivalue;
} drv_host_point_t;

typedef void(drv_host_point_fn)(void *arg, const drv_host_point_t *point);

//  The scraper named name (DRV_HOST_SCRAPERS), or 0.
unsigned drv_host_scraper(const char *name);
//  Says every point of the scrapers asked for, read under root ("/", or
//  "/hostfs" where a container mounts the host). Returns how many
//  scrapers failed (a file missing or unreadable): the first one's reason
//  in err. What the others read is said all the same.
int drv_host_scrape(const char *root, unsigned scrapers, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
//  When the host booted (ns since 1970: /proc/stat's btime), or 0.
int64_t drv_host_boot_ns(const char *root);

//  For the scrapers' files (drv_host_*.c): root/path read whole (at most
//  16 MiB), NUL-ended, to be freed; NULL with err.
char *drv_host_read(const char *root, const char *path, char *err, size_t errlen);
//  A point of name, unit, kind, with up to 5 attributes as key, value pairs
//  (NULL-ended), said to fn.
void drv_host_say(drv_host_point_fn *fn, void *arg, const char *name, const char *unit, int kind, bool is_double,
                  double dvalue, int64_t ivalue, ...);
enum { DRV_HOST_GAUGE, DRV_HOST_UPDOWN, DRV_HOST_COUNTER }; // kind: a gauge, a sum, a monotonic sum

int drv_host_scrape_cpu(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
int drv_host_scrape_memory(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
int drv_host_scrape_load(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
int drv_host_scrape_paging(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
int drv_host_scrape_processes(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
int drv_host_scrape_disk(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
int drv_host_scrape_network(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
int drv_host_scrape_filesystem(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);

#endif
