/*  drv_ctl_table — collects cells, then prints them padded to column width. */
#include "drv_ctl_table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLUMNS 16

struct drv_ctl_table_t {
    int columns;
    char **cells; // rows x columns, row 0 the headers
    size_t rows;
    size_t capacity; // in rows
};

drv_ctl_table_t *drv_ctl_table_new(const char *const *columns)
{
    drv_ctl_table_t *self = calloc(1, sizeof *self);
    while (columns[self->columns] && self->columns < MAX_COLUMNS) {
        self->columns++;
    }
    self->capacity = 16;
    self->cells = calloc(self->capacity * (size_t)self->columns, sizeof(char *));
    for (int c = 0; c < self->columns; c++) {
        self->cells[c] = strdup(columns[c]);
    }
    self->rows = 1;
    return self;
}

void drv_ctl_table_destroy(drv_ctl_table_t **self_p)
{
    if (!self_p || !*self_p) {
        return;
    }
    drv_ctl_table_t *self = *self_p;
    for (size_t i = 0; i < self->rows * (size_t)self->columns; i++) {
        free(self->cells[i]);
    }
    free(self->cells);
    free(self);
    *self_p = NULL;
}

void drv_ctl_table_add(drv_ctl_table_t *self, ...)
{
    if (self->rows == self->capacity) {
        self->capacity *= 2;
        self->cells = realloc(self->cells, self->capacity * (size_t)self->columns * sizeof(char *));
    }
    va_list args;
    va_start(args, self);
    for (int c = 0; c < self->columns; c++) {
        const char *cell = va_arg(args, const char *);
        self->cells[self->rows * (size_t)self->columns + (size_t)c] = strdup(cell ? cell : "");
    }
    va_end(args);
    self->rows++;
}

void drv_ctl_table_print(drv_ctl_table_t *self, FILE *out)
{
    size_t width[MAX_COLUMNS] = {0};
    for (size_t r = 0; r < self->rows; r++) {
        for (int c = 0; c < self->columns; c++) {
            size_t len = strlen(self->cells[r * (size_t)self->columns + (size_t)c]);
            if (len > width[c]) {
                width[c] = len;
            }
        }
    }
    for (size_t r = 0; r < self->rows; r++) {
        for (int c = 0; c < self->columns; c++) {
            const char *cell = self->cells[r * (size_t)self->columns + (size_t)c];
            if (c == self->columns - 1) {
                fprintf(out, "%s\n", cell);
            } else {
                fprintf(out, "%-*s  ", (int)width[c], cell);
            }
        }
    }
}

const char *drv_ctl_str(json_t *obj, const char *key)
{
    const char *value = json_string_value(json_object_get(obj, key));
    return value ? value : "-";
}
