/*  drv_spec_check — what every part of spec validation stands on
    (drv_spec_internal.h): a problem reported at its path, and what a node
    id may be. Below drv_spec.c, drv_spec_nodes.c and drv_spec_buffer.c. */
#include "drv_spec_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void drv_spec_check_problem(drv_spec_check_t *check, const char *path, const char *fmt, ...)
{
    char message[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    char full[600];
    snprintf(full, sizeof full, "%s%s%s", check->prefix, check->prefix[0] && path[0] ? "." : "", path);
    drv_problems_add(check->problems, full, "%s", message);
}

bool drv_spec_valid_id(const char *id)
{
    size_t len = strlen(id);
    if (len < 1 || len > 63) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
            return false;
        }
    }
    return true;
}
