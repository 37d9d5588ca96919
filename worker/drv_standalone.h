/*  drv_standalone — drover-worker --standalone SPEC.json: one instance run by
    a plain process supervisor, without droverd or the broker (benchmark B2's
    baseline). */
#ifndef DRV_STANDALONE_H
#define DRV_STANDALONE_H

int drv_standalone_run(const char *spec_path);

#endif
