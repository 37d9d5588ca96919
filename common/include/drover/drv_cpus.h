/*  drv_cpus — the CPUs this process may run on (sched_getaffinity), so that a
    container's cpuset is what pipelines choose their cores from. */
#ifndef DRV_CPUS_H
#define DRV_CPUS_H

#define DRV_CPUS_MAX 1024

typedef struct {
    int count;             // how many CPUs are allowed
    int ids[DRV_CPUS_MAX]; // their ids, ascending
} drv_cpus_t;

//  Fills cpus from this process's affinity mask. Returns 0 or -1.
int drv_cpus_allowed(drv_cpus_t *cpus);

//  True when cpu is in the set.
int drv_cpus_contains(const drv_cpus_t *cpus, int cpu);

//  Pins the calling process to one CPU. Returns 0 or -1 (errno set).
int drv_cpus_pin(int cpu);

#endif
