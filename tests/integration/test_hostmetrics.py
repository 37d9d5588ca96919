"""receiver:hostmetrics (docs/operations.md, "Host metrics"; issue 51)
through the real binaries: a host's /proc laid out under a root_path, as a
container sees the host under /hostfs, gives exactly the figures its files
hold, named as OpenTelemetry's semantic conventions name them (cpu time in
seconds per CPU and state, memory by state adding up to MemTotal, load,
disk and network counters, paging, processes, the filesystems that are
not virtual measured with statvfs under the root); the machine's own
/proc gives one cpu time per CPU and state and "/"; exporter:otlp posts
them as OTLP metrics (cumulative monotonic sums from the boot, gauges);
a wrong config is refused naming each mistake."""

import glob
import json
import os
import shutil
import tempfile
import unittest

from capture import Capture
from harness import EngineTest, read_ndjson, wait_until

STAT = """cpu  10 20 30 40 50 60 70 80 0 0
cpu0 100 200 300 400 500 600 700 800 0 0
cpu1 1 2 3 4 5 6 7 8 0 0
intr 1 2 3
ctxt 12345
btime 1700000000
processes 4242
procs_running 3
procs_blocked 1
"""
MEMINFO = """MemTotal:       16000 kB
MemFree:         4000 kB
MemAvailable:    9000 kB
Buffers:         1000 kB
Cached:          5000 kB
SwapCached:         0 kB
SReclaimable:     700 kB
SUnreclaim:       300 kB
"""
DISKSTATS = """   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   8       0 sda 100 5 2000 300 50 6 1000 400 2 900 1200 0 0 0 0 0 0
"""
NETDEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0:   50000     400    2    3    0     0          0         0    60000     500    4    5    0     0       0          0
"""
VMSTAT = "pgpgin 111\npgpgout 222\npswpin 3\npswpout 4\npgfault 1000\npgmajfault 10\n"
SWAPS = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/sdb2 partition 2048 512 -2\n"
MOUNTINFO = """22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:5 / /proc rw,nosuid - proc proc rw
24 22 0:20 / /run rw,nosuid shared:5 - tmpfs tmpfs rw
25 22 8:2 / /data\\040disk ro,relatime shared:2 - ext4 /dev/sda2 ro
"""


def fake_host(root):
    files = {"proc/stat": STAT, "proc/meminfo": MEMINFO, "proc/loadavg": "0.50 1.25 2.00 2/300 999\n",
             "proc/diskstats": DISKSTATS, "proc/1/net/dev": NETDEV, "proc/vmstat": VMSTAT, "proc/swaps": SWAPS,
             "proc/1/mountinfo": MOUNTINFO, "etc/hostname": "node-7\n"}
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(root, "data disk"))


def points(rows):
    """{(name, sorted attributes): value} of one scrape's records (the first time seen)."""
    first = rows[0]["time_unix_nano"]
    return {(r["name"], tuple(sorted(r["attributes"].items()))): r["value"] for r in rows
            if r["time_unix_nano"] == first}


class HostMetrics(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.dir = tempfile.mkdtemp(prefix="drv-host-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def put(self, config, out=None):
        nodes = {"h": {"type": "receiver:hostmetrics", "config": config, "to": ["out"]},
                 "out": out or {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out.ndjson"}}}
        return self.admin.http("PUT", "/api/v1/groups/default/pipelines/host",
                               body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)

    def rows(self):
        return [r for p in glob.glob(f"{self.engine.out_dir}/out.ndjson") for r in read_ndjson(p)]

    def test_a_hosts_proc_under_root_path_gives_exactly_its_figures(self):
        root = os.path.join(self.dir, "hostfs")
        fake_host(root)
        status, body, _ = self.put({"root_path": root, "interval_secs": 60})
        self.assertEqual(status, 200, body)
        rows = wait_until(lambda: self.rows() or None, 20, "the first scrape, at start")
        got = points(rows)
        hz = os.sysconf("SC_CLK_TCK")
        for state, ticks in zip(("user", "nice", "system", "idle", "wait", "interrupt", "softirq", "steal"),
                                (100, 200, 300, 400, 500, 600, 700, 800)):
            self.assertAlmostEqual(got[("system.cpu.time", (("cpu", "cpu0"), ("state", state)))], ticks / hz)
        self.assertEqual(len([k for k in got if k[0] == "system.cpu.time"]), 16, "two CPUs, eight states")
        memory = {dict(k[1])["state"]: v for k, v in got.items() if k[0] == "system.memory.usage"}
        self.assertEqual(memory, {"used": 5000 * 1024, "free": 4000 * 1024, "buffered": 1000 * 1024,
                                  "cached": 5000 * 1024, "slab_reclaimable": 700 * 1024,
                                  "slab_unreclaimable": 300 * 1024})
        self.assertEqual(sum(memory.values()), 16000 * 1024, "the states add up to MemTotal")
        self.assertEqual((got[("system.cpu.load_average.1m", ())], got[("system.cpu.load_average.15m", ())]),
                         (0.5, 2.0))
        sda = lambda name, direction=None: got[(name, (("device", "sda"),) + (  # noqa: E731
            (("direction", direction),) if direction else ()))]
        self.assertEqual((sda("system.disk.io", "read"), sda("system.disk.io", "write")), (2000 * 512, 1000 * 512))
        self.assertEqual((sda("system.disk.operations", "read"), sda("system.disk.merged", "write")), (100, 6))
        self.assertAlmostEqual(sda("system.disk.io_time"), 0.9)
        self.assertEqual(got[("system.disk.pending_operations", (("device", "sda"),))], 2)
        self.assertFalse([k for k in got if ("device", "loop0") in k[1]], "a never-used loop device says nothing")
        eth0 = lambda name, direction: got[(name, (("device", "eth0"), ("direction", direction)))]  # noqa: E731
        self.assertEqual((eth0("system.network.io", "receive"), eth0("system.network.io", "transmit")), (50000, 60000))
        self.assertEqual((eth0("system.network.errors", "receive"), eth0("system.network.dropped", "transmit")),
                         (2, 5))
        self.assertEqual(got[("system.paging.usage", (("device", "/dev/sdb2"), ("state", "used")))], 512 * 1024)
        self.assertEqual(got[("system.paging.operations", (("direction", "page_in"), ("type", "major")))], 3)
        self.assertEqual(got[("system.paging.faults", (("type", "minor"),))], 990)
        self.assertEqual(got[("system.processes.count", (("status", "running"),))], 3)
        self.assertEqual(got[("system.processes.created", ())], 4242)
        #  Filesystems: "/" and "/data disk" (escaped in mountinfo), measured under the root; proc and tmpfs not.
        mounts = {dict(k[1])["mountpoint"] for k in got if k[0] == "system.filesystem.usage"}
        self.assertEqual(mounts, {"/", "/data disk"})
        vfs = os.statvfs(os.path.join(root, "data disk"))
        data = {dict(k[1])["state"]: v for k, v in got.items()
                if k[0] == "system.filesystem.usage" and dict(k[1])["mountpoint"] == "/data disk"}
        self.assertEqual(sum(data.values()), vfs.f_blocks * vfs.f_frsize)
        attrs = next(dict(k[1]) for k in got if k[0] == "system.filesystem.usage")
        self.assertEqual(set(attrs), {"device", "mode", "mountpoint", "type", "state"})
        ro = next(dict(k[1]) for k in got if k[0] == "system.filesystem.usage" and ("mountpoint", "/data disk") in k[1])
        self.assertEqual((ro["device"], ro["mode"], ro["type"]), ("/dev/sda2", "ro", "ext4"))
        #  The shape of every record.
        cpu = next(r for r in rows if r["name"] == "system.cpu.time")
        self.assertEqual((cpu["type"], cpu["is_monotonic"], cpu["aggregation_temporality"], cpu["unit"]),
                         ("sum", True, 2, "s"))
        self.assertEqual(cpu["start_time_unix_nano"], 1700000000 * 10**9, "cumulative from the boot")
        self.assertEqual(cpu["resource"], {"host.name": "node-7"})
        memory_row = next(r for r in rows if r["name"] == "system.memory.usage")
        self.assertEqual((memory_row["is_monotonic"], memory_row["unit"]), (False, "By"))
        load = next(r for r in rows if r["name"] == "system.cpu.load_average.1m")
        self.assertEqual(load["type"], "gauge")
        self.assertNotIn("start_time_unix_nano", load)
        self.assertNotIn("observed_time_unix_nano", load, "a metric has no observed time")

    def test_this_machine_and_otlp_metrics_out(self):
        capture = Capture()
        self.addCleanup(capture.close)
        status, body, _ = self.put({"interval_secs": 1, "scrapers": ["cpu", "load", "filesystem"]},
                                   out={"type": "exporter:otlp", "config": {"endpoint": capture.url(), "encoding": "json",
                                                                            "batch": {"max_delay_ms": 50}}})
        self.assertEqual(status, 200, body)
        posted = wait_until(lambda: [json.loads(r.body) for r in capture.accepted if r.path == "/v1/metrics"][:2]
                            if len([r for r in capture.accepted if r.path == "/v1/metrics"]) >= 2 else None,
                            20, "two scrapes posted as OTLP metrics")
        metrics = {m["name"]: m for rm in posted[0]["resourceMetrics"] for sm in rm["scopeMetrics"]
                   for m in sm["metrics"]}
        self.assertEqual(set(metrics) - {"system.cpu.time", "system.cpu.load_average.1m", "system.cpu.load_average.5m",
                                         "system.cpu.load_average.15m", "system.filesystem.usage",
                                         "system.filesystem.inodes.usage"}, set())
        cpu = metrics["system.cpu.time"]["sum"]
        self.assertTrue(cpu["isMonotonic"])
        self.assertIn(cpu["aggregationTemporality"], (2, "AGGREGATION_TEMPORALITY_CUMULATIVE"))
        cpus = {a["value"]["stringValue"] for p in cpu["dataPoints"] for a in p["attributes"] if a["key"] == "cpu"}
        self.assertEqual(len(cpus), os.cpu_count())
        self.assertEqual(len(cpu["dataPoints"]), 8 * os.cpu_count())
        self.assertIn("gauge", metrics["system.cpu.load_average.1m"])
        roots = [p for p in metrics["system.filesystem.usage"]["sum"]["dataPoints"]
                 if {"key": "mountpoint", "value": {"stringValue": "/"}} in p["attributes"]]
        self.assertEqual(len(roots), 3, "used, free, reserved of /")
        resource = posted[0]["resourceMetrics"][0]["resource"]["attributes"]
        self.assertEqual([a["key"] for a in resource], ["host.name"])

    def test_a_wrong_config_is_refused_naming_each_mistake(self):
        status, body, _ = self.put({"interval_secs": 0, "scrapers": ["cpu", "gpu"], "root_path": "hostfs"})
        self.assertEqual(status, 422, body)
        paths = {d["path"] for d in body["error"]["details"]}
        self.assertEqual(paths, {"nodes.h.config.interval_secs", "nodes.h.config.scrapers[1]",
                                 "nodes.h.config.root_path"})
        #  A root that is not a host's: the instance never becomes ready, and says why.
        status, body, _ = self.put({"root_path": self.dir})
        self.assertNotEqual(status, 200)
        self.assertIn("proc/stat has no btime", json.dumps(body))


if __name__ == "__main__":
    unittest.main()
