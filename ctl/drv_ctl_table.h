/*  drv_ctl_table — aligned text tables for droverctl's human output. */
#ifndef DRV_CTL_TABLE_H
#define DRV_CTL_TABLE_H

#include <jansson.h>
#include <stdio.h>

typedef struct drv_ctl_table_t drv_ctl_table_t;

//  columns: a NULL-terminated list of headers.
drv_ctl_table_t *drv_ctl_table_new(const char *const *columns);
void drv_ctl_table_destroy(drv_ctl_table_t **self_p);
//  Adds a row of as many printf-formatted cells as there are columns.
void drv_ctl_table_add(drv_ctl_table_t *self, ...);
void drv_ctl_table_print(drv_ctl_table_t *self, FILE *out);
//  A string member of obj, or "-" when missing: a cell.
const char *drv_ctl_str(json_t *obj, const char *key);

#endif
