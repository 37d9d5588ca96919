/*  receiver:hostmetrics's schema (worker/nodes/drv_receiver_hostmetrics.c
    is its code, worker/host/ its scrapers). */
#include "drv_schemas.h"

#include "drover/drv_node_schema.h"

#include <string.h>

static const char *const s_scrapers[] = {"cpu",  "memory",  "load",   "filesystem",
                                         "disk", "network", "paging", "processes"};

static void s_check(drv_spec_check_t *check, const char *node_path, const json_t *config)
{
    char at[512];
    const json_t *interval = json_object_get(config, "interval_secs");
    if (interval && json_is_integer(interval) && json_integer_value(interval) < 1) {
        snprintf(at, sizeof at, "%s.config.interval_secs", node_path);
        drv_spec_check_problem(check, at, "must be from 1 to 86400");
    }
    size_t i;
    const json_t *name;
    json_array_foreach(json_object_get(config, "scrapers"), i, name)
    {
        bool known = false;
        for (size_t k = 0; k < sizeof s_scrapers / sizeof s_scrapers[0]; k++) {
            known |= json_is_string(name) && !strcmp(json_string_value(name), s_scrapers[k]);
        }
        if (!known) {
            snprintf(at, sizeof at, "%s.config.scrapers[%zu]", node_path, i);
            drv_spec_check_problem(check, at,
                                   "unknown scraper \"%s\" (cpu, memory, load, filesystem, disk, network, "
                                   "paging, processes)",
                                   json_is_string(name) ? json_string_value(name) : "?");
        }
    }
    const char *root = json_string_value(json_object_get(config, "root_path"));
    if (root && root[0] != '/') {
        snprintf(at, sizeof at, "%s.config.root_path", node_path);
        drv_spec_check_problem(check, at, "must be an absolute path (/, or /hostfs where the host is mounted)");
    }
}

const drv_node_schema_t drv_schema_receiver_hostmetrics = {
    .name = "receiver:hostmetrics",
    .role = DRV_ROLE_RECEIVER,
    .doc = "The host's figures from /proc and /sys every interval, as metric records named as OpenTelemetry's "
           "semantic conventions name them (system.cpu.time, system.memory.usage, system.filesystem.usage, "
           "system.disk.io, system.network.io, system.cpu.load_average.1m, system.paging.*, system.processes.*): "
           "sums cumulative from the host's boot, resource host.name. docs/operations.md, \"Host metrics\".",
    .example = "{type: receiver:hostmetrics, config: {interval_secs: 10, root_path: /hostfs}, to: [out]}",
    .details = "| scraper | metrics (attributes) | from |\n"
               "| --- | --- | --- |\n"
               "| `cpu` | `system.cpu.time` s (`cpu`, `state`: user, nice, system, idle, wait, interrupt, softirq,"
               " steal) | `/proc/stat` |\n"
               "| `memory` | `system.memory.usage` By (`state`: used, free, buffered, cached, slab_reclaimable,"
               " slab_unreclaimable — they add up to MemTotal), `system.memory.limit` By | `/proc/meminfo` |\n"
               "| `load` | `system.cpu.load_average.1m`, `.5m`, `.15m` {thread} (gauges) | `/proc/loadavg` |\n"
               "| `filesystem` | `system.filesystem.usage` By (`device`, `mode`, `mountpoint`, `type`, `state`:"
               " used, free, reserved), `system.filesystem.inodes.usage` {inode} (state used, free) | the mount"
               " table, `statvfs(2)` |\n"
               "| `disk` | `system.disk.io` By, `system.disk.operations`, `system.disk.merged` {operation},"
               " `system.disk.operation_time` s (`device`, `direction`: read, write); `system.disk.io_time`,"
               " `system.disk.weighted_io_time` s, `system.disk.pending_operations` (`device`) | `/proc/diskstats` |\n"
               "| `network` | `system.network.io` By, `system.network.packets`, `system.network.errors`,"
               " `system.network.dropped` (`device`, `direction`: receive, transmit) | `/proc/net/dev` |\n"
               "| `paging` | `system.paging.usage` By (`device`, `state`: used, free), `system.paging.operations`"
               " {operation} (`direction`: page_in, page_out; `type`: major — swap, minor — page ins and outs),"
               " `system.paging.faults` {fault} (`type`) | `/proc/swaps`, `/proc/vmstat` |\n"
               "| `processes` | `system.processes.count` {process} (`status`: running, blocked),"
               " `system.processes.created` {process} | `/proc/stat` |\n"
               "\n"
               "Counters are cumulative sums from the host's boot (`start_time_unix_nano` is `/proc/stat`'s"
               " `btime`; monotonic where they only grow); usages are non-monotonic sums; the load averages are"
               " gauges. Every record has the resource `host.name` and the scope `drover/receiver/hostmetrics`.\n",
    .keys = {{.key = "interval_secs",
              .kind = DRV_KEY_NONNEG_INT,
              .fallback = "10",
              .maximum = 86400,
              .doc = "seconds between scrapes; the first is at start"},
             {.key = "scrapers",
              .kind = DRV_KEY_STRING_LIST,
              .fallback = "[\"cpu\", \"memory\", \"load\", \"filesystem\", \"disk\", \"network\", \"paging\", "
                          "\"processes\"]",
              .doc = "which figures: cpu, memory, load, filesystem, disk, network, paging, processes"},
             {.key = "root_path",
              .kind = DRV_KEY_STRING,
              .fallback = "\"/\"",
              .doc = "where the host's root is: / on the host, /hostfs in a container that mounts it there "
                     "(its /proc/1 then gives the host's mounts and interfaces)"}},
    .check = s_check,
};
