/*  drv_histo — see the header. */
#include "drover/drv_histo.h"

#include <stdbool.h>

static const double s_short[] = DRV_HISTO_BOUNDS;
static const double s_long[] = DRV_HISTO_LONG_BOUNDS;

void drv_histo_observe(drv_histo_t *self, double secs)
{
    const double *s_bounds = self->long_bounds ? s_long : s_short;
    int i = 0;
    while (i < DRV_HISTO_BUCKETS - 1 && secs > s_bounds[i]) {
        i++;
    }
    self->counts[i]++;
    self->count++;
    self->sum_secs += secs;
}

json_t *drv_histo_json(const drv_histo_t *self)
{
    json_t *json = json_pack("[f, I]", self->sum_secs, (json_int_t)self->count);
    for (int i = 0; i < DRV_HISTO_BUCKETS; i++) {
        json_array_append_new(json, json_integer(self->counts[i]));
    }
    return json;
}

bool drv_histo_add_json(drv_histo_t *self, const json_t *json)
{
    if (!json_is_array(json) || json_array_size(json) != 2 + DRV_HISTO_BUCKETS ||
        !json_is_number(json_array_get(json, 0))) {
        return false;
    }
    self->sum_secs += json_number_value(json_array_get(json, 0));
    self->count += json_integer_value(json_array_get(json, 1));
    for (int i = 0; i < DRV_HISTO_BUCKETS; i++) {
        self->counts[i] += json_integer_value(json_array_get(json, 2 + (size_t)i));
    }
    return true;
}

void drv_histo_render(const drv_histo_t *self, const char *name, const char *labels, drv_histo_print_fn *print,
                      void *arg)
{
    const double *s_bounds = self->long_bounds ? s_long : s_short;
    const char *comma = labels[0] ? "," : "";
    int64_t cumulative = 0;
    for (int i = 0; i < DRV_HISTO_BUCKETS; i++) {
        cumulative += self->counts[i];
        if (i < DRV_HISTO_BUCKETS - 1) {
            print(arg, "%s_bucket{%s%sle=\"%g\"} %lld\n", name, labels, comma, s_bounds[i], (long long)cumulative);
        } else {
            print(arg, "%s_bucket{%s%sle=\"+Inf\"} %lld\n", name, labels, comma, (long long)cumulative);
        }
    }
    print(arg, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "", self->sum_secs);
    print(arg, "%s_count%s%s%s %lld\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
          (long long)self->count);
}
