/*  drv_cpus — allowed CPUs and pinning. */
#include "drover/drv_cpus.h"

#include <sched.h>
#include <string.h>

int drv_cpus_allowed(drv_cpus_t *cpus)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        return -1;
    }
    memset(cpus, 0, sizeof *cpus);
    for (int cpu = 0; cpu < CPU_SETSIZE && cpu < DRV_CPUS_MAX; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            cpus->ids[cpus->count++] = cpu;
        }
    }
    return 0;
}

int drv_cpus_contains(const drv_cpus_t *cpus, int cpu)
{
    for (int i = 0; i < cpus->count; i++) {
        if (cpus->ids[i] == cpu) {
            return 1;
        }
    }
    return 0;
}

int drv_cpus_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}
