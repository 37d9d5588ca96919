/*  drv_yaml — a YAML file to the jansson document model, remembering the line
    of every node so that errors can name file, line and field. */
#ifndef DRV_YAML_H
#define DRV_YAML_H

#include <jansson.h>
#include <stddef.h>

//  Parses YAML text (JSON is accepted too). On success returns a new reference
//  and, when lines is not NULL, *lines = {"dotted.path": line, ...}. On failure
//  returns NULL and err holds "line N: reason".
json_t *drv_yaml_parse(const char *text, size_t size, json_t **lines, char *err, size_t errlen);

//  The line recorded for path, or for its longest recorded prefix; 0 if none.
int drv_yaml_line_of(const json_t *lines, const char *path);

//  The document as block-style YAML text (malloc'd; NULL out of memory)
//  that drv_yaml_parse reads back as the same document (drv_yaml_emit.c).
char *drv_yaml_emit(const json_t *doc);

#endif
