/*  drv_regex — see drv_regex.h. */
#include "drv_regex.h"

pcre2_match_context *drv_regex_context(void)
{
    pcre2_match_context *context = pcre2_match_context_create(NULL);
    if (context) {
        pcre2_set_match_limit(context, DRV_REGEX_MATCH_LIMIT);
        pcre2_set_depth_limit(context, DRV_REGEX_DEPTH_LIMIT);
        pcre2_set_heap_limit(context, DRV_REGEX_HEAP_KIB);
    }
    return context;
}
