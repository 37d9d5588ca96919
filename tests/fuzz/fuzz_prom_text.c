/*  A scraped body as receiver:prometheus meets it: the first byte's bit 0
    says OpenMetrics (else the text format 0.0.4). Whatever the bytes, the
    parse refuses with the line and the reason, or says at most
    sample_limit samples, each with a name, its labels ended in place; the
    points they make become records that, packed, decode through drv_batch
    (keys unique at every depth) as exactly that many. */
#include "fuzz.h"

#include "drv_prom_points.h"
#include "drv_prom_text.h"

#include "drover/drv_batch.h"

#include <stdlib.h>
#include <string.h>

static void s_check(void *arg, const drv_prom_sample_t *s)
{
    FUZZ_ASSERT(s->name[0] && s->family[0] && s->label_count <= DRV_PROM_TEXT_LABELS_MAX);
    for (size_t i = 0; i < s->label_count; i++) {
        FUZZ_ASSERT(s->labels[i].name[0]);
        (void)strlen(s->labels[i].value);
    }
    drv_prom_points_add(arg, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    bool om = data[0] & 1;
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object map = {.type = MSGPACK_OBJECT_MAP};
    drv_prom_points_t *points = drv_prom_points_new(&zone, &map, &map, &map, 1000);
    char err[300] = "";
    int n = drv_prom_text_parse(text, size - 1, om, 500, s_check, points, err, sizeof err);
    FUZZ_ASSERT(n <= 500);
    FUZZ_ASSERT(n >= 0 || !strncmp(err, "line ", 5));
    if (n >= 0) {
        msgpack_object *records;
        int count = drv_prom_points_records(points, &records);
        FUZZ_ASSERT(count >= 0 && count <= n);
        if (count > 0) {
            msgpack_sbuffer out;
            fuzz_pack_records(records, count, &out);
            msgpack_zone again;
            msgpack_zone_init(&again, 4096);
            msgpack_object root;
            const msgpack_object *decoded;
            char why[300];
            FUZZ_ASSERT(drv_batch_decode(out.data, out.size, &again, &root, &decoded, why, sizeof why) == count);
            msgpack_zone_destroy(&again);
            msgpack_sbuffer_destroy(&out);
        }
    }
    drv_prom_points_destroy(&points);
    msgpack_zone_destroy(&zone);
    free(text);
    return 0;
}
