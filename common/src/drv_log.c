/*  drv_log — one-line structured logs on stderr.
    Each line goes out in a single write(2) so that the lines of the supervisor,
    broker and workers, which share one stderr, never interleave mid-line. */
#include "drover/drv_log.h"
#include "drover/drv_time.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int s_level = DRV_LOG_INFO;
static char s_component[64] = "drover";
static const char *s_level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
static drv_log_sink_fn s_sink;
static void *s_sink_arg;
static int s_in_sink; // a line the sink causes goes to stderr only

void drv_log_sink(drv_log_sink_fn sink, void *arg)
{
    s_sink = sink;
    s_sink_arg = arg;
}

void drv_log_init(const char *component)
{
    snprintf(s_component, sizeof s_component, "%s", component);
    const char *env = getenv("DROVER_LOG");
    if (!env) {
        return;
    }
    if (strcmp(env, "debug") == 0) {
        s_level = DRV_LOG_DEBUG;
    } else if (strcmp(env, "info") == 0) {
        s_level = DRV_LOG_INFO;
    } else if (strcmp(env, "warn") == 0) {
        s_level = DRV_LOG_WARN;
    } else if (strcmp(env, "error") == 0) {
        s_level = DRV_LOG_ERROR;
    }
}

void drv_log_write(int level, const char *fmt, ...)
{
    if (level < s_level) {
        return;
    }
    char line[2048];
    char stamp[40];
    int64_t now = drv_time_wall_ms();
    drv_time_rfc3339(now, stamp, sizeof stamp);
    int used = snprintf(line, sizeof line, "%s %s %s: ", stamp, s_level_names[level], s_component);
    va_list args;
    va_start(args, fmt);
    int rest = vsnprintf(line + used, sizeof line - used - 1, fmt, args);
    va_end(args);
    size_t len = used + (rest < 0 ? 0 : (size_t)rest);
    if (len > sizeof line - 2) {
        len = sizeof line - 2; // truncated: still one line
    }
    for (size_t i = used; i < len; i++) {
        if (line[i] == '\n') {
            line[i] = ' ';
        }
    }
    line[len++] = '\n';
    ssize_t rc = write(STDERR_FILENO, line, len);
    (void)rc;
    if (s_sink && !s_in_sink) {
        s_in_sink = 1;
        s_sink(s_sink_arg, level, now, line + used, len - 1 - used);
        s_in_sink = 0;
    }
}
