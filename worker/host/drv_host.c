/*  drv_host — see drv_host.h: the scrapers by name, and what they share. */
#include "drv_host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_MAX (16 << 20)

static const struct {
    const char *name;
    unsigned bit;
    int (*scrape)(const char *root, drv_host_point_fn *fn, void *arg, char *err, size_t errlen);
} s_scrapers[] = {
    {"cpu", DRV_HOST_CPU, drv_host_scrape_cpu},
    {"memory", DRV_HOST_MEMORY, drv_host_scrape_memory},
    {"load", DRV_HOST_LOAD, drv_host_scrape_load},
    {"filesystem", DRV_HOST_FILESYSTEM, drv_host_scrape_filesystem},
    {"disk", DRV_HOST_DISK, drv_host_scrape_disk},
    {"network", DRV_HOST_NETWORK, drv_host_scrape_network},
    {"paging", DRV_HOST_PAGING, drv_host_scrape_paging},
    {"processes", DRV_HOST_PROCESSES, drv_host_scrape_processes},
};

unsigned drv_host_scraper(const char *name)
{
    for (size_t i = 0; name && i < sizeof s_scrapers / sizeof s_scrapers[0]; i++) {
        if (!strcmp(s_scrapers[i].name, name)) {
            return s_scrapers[i].bit;
        }
    }
    return 0;
}

int drv_host_scrape(const char *root, unsigned scrapers, drv_host_point_fn *fn, void *arg, char *err, size_t errlen)
{
    int failed = 0;
    err[0] = 0;
    for (size_t i = 0; i < sizeof s_scrapers / sizeof s_scrapers[0]; i++) {
        char why[300];
        if ((scrapers & s_scrapers[i].bit) && s_scrapers[i].scrape(root, fn, arg, why, sizeof why) != 0) {
            if (failed++ == 0) {
                snprintf(err, errlen, "%s: %s", s_scrapers[i].name, why);
            }
        }
    }
    return failed;
}

char *drv_host_read(const char *root, const char *path, char *err, size_t errlen)
{
    char full[4200];
    snprintf(full, sizeof full, "%s%s", strcmp(root, "/") ? root : "", path);
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", full, strerror(errno));
        return NULL;
    }
    size_t size = 0, cap = 16384;
    char *text = malloc(cap);
    for (;;) {
        if (!text) {
            snprintf(err, errlen, "%s: out of memory", full);
            break;
        }
        if (size + 1 >= cap) {
            char *grown = cap < READ_MAX ? realloc(text, cap * 2) : NULL;
            if (!grown) {
                snprintf(err, errlen, "%s: over %d bytes", full, READ_MAX);
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            cap *= 2;
        }
        ssize_t got = read(fd, text + size, cap - size - 1); // proc files: read until 0, each read a page or so
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            snprintf(err, errlen, "%s: %s", full, strerror(errno));
            free(text);
            text = NULL;
            break;
        }
        if (got == 0) {
            text[size] = 0;
            break;
        }
        size += (size_t)got;
    }
    close(fd);
    return text;
}

void drv_host_say(drv_host_point_fn *fn, void *arg, const char *name, const char *unit, int kind, bool is_double,
                  double dvalue, int64_t ivalue, ...)
{
    drv_host_point_t point = {.name = name,
                              .unit = unit,
                              .sum = kind != DRV_HOST_GAUGE,
                              .monotonic = kind == DRV_HOST_COUNTER,
                              .is_double = is_double,
                              .dvalue = dvalue,
                              .ivalue = ivalue};
    va_list ap;
    va_start(ap, ivalue);
    const char *key;
    while (point.attrs < DRV_HOST_MAX_ATTRS && (key = va_arg(ap, const char *))) {
        point.keys[point.attrs] = key;
        point.values[point.attrs++] = va_arg(ap, const char *);
    }
    va_end(ap);
    fn(arg, &point);
}

int64_t drv_host_boot_ns(const char *root)
{
    char err[300];
    char *stat = drv_host_read(root, "/proc/stat", err, sizeof err);
    const char *at = stat ? strstr(stat, "\nbtime ") : NULL;
    int64_t boot = at ? strtoll(at + 7, NULL, 10) * 1000000000LL : 0;
    free(stat);
    return boot;
}
