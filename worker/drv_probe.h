/*  drv_probe — drover-worker --probe: a throwaway instance for
    dry_run=instantiate. It reads {spec, group, pipeline, generation, core}
    as JSON on stdin, builds every node in probe mode (files checked, not
    created; listeners stood in for, droverd probes those; scripts compiled
    and their top level run), tears it all down, and prints
    {problems: [{path, message}]} on stdout. */
#ifndef DRV_PROBE_H
#define DRV_PROBE_H

//  Returns the process's exit code: 0 when it could say (problems or not), 2 on bad input.
int drv_probe_main(void);

#endif
