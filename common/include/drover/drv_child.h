/*  drv_child — a new instance process's first steps, the same whether it was
    forked by droverd (then exec'd) or by the worker zygote: its own process
    group (a terminal's Ctrl-C reaches droverd only, which then drains the
    children in order), the parent-death signal (droverd's death ends it),
    pinned to its core, no blocked signals and SIGPIPE at its default.

    Runs between fork and exec in a multi-threaded parent: only
    async-signal-safe calls. */
#ifndef DRV_CHILD_H
#define DRV_CHILD_H

#include <sys/types.h>

#define DRV_CHILD_OK 0
#define DRV_CHILD_ORPHANED -1   // its parent is not `parent` (droverd died meanwhile)
#define DRV_CHILD_PIN_FAILED -2 // pinning to cpu failed; errno says why

//  cpu < 0: not pinned. Returns DRV_CHILD_OK or one of the failures above.
int drv_child_first_steps(pid_t parent, int cpu);

#endif
