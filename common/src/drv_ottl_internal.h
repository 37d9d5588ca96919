/*  drv_ottl's parts (common/src): the grammar (drv_ottl.c) asks the names
    (drv_ottl_names.c) what a word is. */
#ifndef DRV_OTTL_INTERNAL_H
#define DRV_OTTL_INTERNAL_H

#include "drover/drv_ottl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  A converter by name: 0 with what it is and takes, or -1 with the closest name (or NULL) in *close.
int drv_ottl_function_find(const char *name, drv_ottl_function_t *function, int *min_args, int *max_args,
                           const char **close);
//  A path by its words ("resource.attributes"): 0 with the record's key
//  ("resource"; "scope.name" for two) and whether it takes [keys], or -1
//  with the closest path (or NULL) in *close.
int drv_ottl_path_find(const char *name, const char **key, bool *indexed, const char **close);
//  An enum's value (SEVERITY_NUMBER_WARN: 13): true when name (len bytes) is one.
bool drv_ottl_enum_find(const char *name, size_t len, int64_t *value);

#endif
