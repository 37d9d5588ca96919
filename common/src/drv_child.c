/*  drv_child — the first steps of every instance process (see drv_child.h). */
#include "drover/drv_child.h"

#include "drover/drv_cpus.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

int drv_child_first_steps(pid_t parent, int cpu)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    //  Checked after asking for the signal: had the parent died before, the
    //  signal would never come.
    if (getppid() != parent) {
        return DRV_CHILD_ORPHANED;
    }
    if (cpu >= 0 && drv_cpus_pin(cpu) != 0) {
        return DRV_CHILD_PIN_FAILED;
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    return DRV_CHILD_OK;
}
