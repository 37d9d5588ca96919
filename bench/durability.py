#!/usr/bin/env python3
"""B17, B18: what a disk buffer (policies.buffer type: disk) costs.

B17 OTLP/HTTP logs ingest as B9 (drover-bench otlp-post: protobuf requests
    of 100 ~300-byte LogRecords over keep-alive connections into
    receiver:otlp, one instance, -> exporter:null), with `type: memory`
    (the baseline, same run and load), `type: disk, sync: batch` (goal
    >= 0.7 of it) and `type: disk, sync: always` (reported); over 64
    connections and over B9's 8. A request is answered once the sync that
    covers it is done, so with N requests in flight at most N share one
    fdatasync: over 8 connections the rate is bound by the disk's sync
    latency, over 64 by the CPU.
B18 A restart with GB unsettled on disk: a pipeline whose exporter:otlp
    posts to a port nobody listens on takes OTLP until its log holds the
    size asked for; droverd and every child are SIGKILLed; droverd starts
    again with a config that also runs the backend (receiver:otlp ->
    exporter:null on that port). Measured: from droverd's start to the
    first new request answered 200 (goal < 1 s), and the RSS of droverd
    plus the instance while the log is read back, against the same
    processes idle (right after the first start, before any load; goal
    < 2x; Fluent Bit's 4.6x in fluent/fluent-bit#5166 is the figure to
    beat), and how long the whole backlog took to drain.

Usage: bench/durability.py [SECONDS] [GB] [--smoke]"""

import glob
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import BIN, Engine, engine_yaml, free_port, proc_status, wait_until  # noqa: E402
from ingest import LOAD, engine_with, pipeline, rate  # noqa: E402

BENCH = os.path.join(BIN, "drover-bench")


def b17(seconds, buffer, connections):
    port = free_port()
    spec = pipeline({"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["out"]},
                     "out": {"type": "exporter:null"}}, 0)
    if buffer:
        spec["pipeline"]["policies"] = {"buffer": buffer}
    engine, http = engine_with({"b17": spec})
    try:
        load = subprocess.Popen([*LOAD, "otlp-post", f"http://127.0.0.1:{port}/v1/logs", str(seconds),
                                 str(connections), "0"], stdout=subprocess.PIPE, text=True)
        value = rate(http, "b17", seconds)
        out, _ = load.communicate(timeout=seconds + 15)
        return value, int(re.search(r"failed=(\d+)", out).group(1))
    finally:
        engine.cleanup()


def rss_kb(pids):
    return sum(int((proc_status(p, "VmRSS") or "0 kB").split()[0]) for p in pids)


def metric(http, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=5).read().decode()
    found = re.search(r'^%s\{group="default",pipeline="b18"\} (\d+)$' % name, text, re.M)
    return int(found.group(1)) if found else 0


def post_one(port):
    """One small OTLP/HTTP request with curl: its status, or 0 when refused."""
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                          "Content-Type: application/json", "--data-binary",
                          '{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"new"}}]}]}]}',
                          f"http://127.0.0.1:{port}/v1/logs"], capture_output=True, text=True, timeout=10)
    return int(out.stdout or 0)


def b18(gigabytes):
    http, port, sink = free_port(), free_port(), free_port()
    b18_pipe = f"""
      b18:
        cores: {{set: [0]}}
        nodes:
          in: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{port}"}}, to: [out]}}
          out: {{type: "exporter:otlp", config: {{endpoint: "http://127.0.0.1:{sink}", compression: none,
                 retry: {{initial_ms: 100, max_ms: 500, max_elapsed_secs: 0}}}}}}
        policies:
          buffer: {{type: disk, max_bytes: {int(gigabytes * 2 * (1 << 30))}}}
"""
    sink_pipe = f"""
      sink:
        cores: {{set: [1]}}
        nodes:
          in: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{sink}"}}, to: [out]}}
          out: {{type: exporter:null}}
"""
    config = engine_yaml(b18_pipe, "  heartbeat_interval_ms: 100\n").replace("HTTP", str(http))
    engine = Engine(config).start()
    try:
        wait_until(lambda: len(engine.instances()) == 1, 20, "the instance")
        wait_until(lambda: post_one(port) == 200, 20, "the receiver")
        def measured():  # droverd and the instance reading its log back (not the backend's)
            return [engine.pid, *(pid for title, pid in engine.instances().items() if "/b18@" in title)]

        idle = rss_kb(measured())
        logs = os.path.join(engine.run_dir, "buffer", "default", "b18")
        want = gigabytes * (1 << 30)

        def on_disk():  # the log's segments (spare-N.log, recycled ones waiting, hold nothing)
            total = 0
            for path in glob.glob(f"{logs}/*/*.log") + glob.glob(f"{logs}/*/*.wal"):
                try:
                    if not os.path.basename(path).startswith("spare-"):
                        total += os.path.getsize(path)
                except FileNotFoundError:
                    pass  # settled and recycled since the glob
            return total

        while on_disk() < want:
            subprocess.run([*LOAD, "otlp-post", f"http://127.0.0.1:{port}/v1/logs", "2", "8", "0"],
                           capture_output=True, timeout=60)
        backlog = on_disk()
        engine.signal(signal.SIGKILL)
        engine.wait_exit(20)
        engine.log.close()
        with open(engine.config_path, "w") as f:
            f.write(engine_yaml(b18_pipe + sink_pipe, "  heartbeat_interval_ms: 100\n")
                    .replace("HTTP", str(http)).replace("{RUN}", engine.run_dir))
        started = time.monotonic()
        engine.start()
        wait_until(lambda: post_one(port) == 200, 30, "the first new request answered")
        accepted = time.monotonic() - started
        peak = 0
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            peak = max(peak, rss_kb(measured()))
            if (metric(http, "drover_buffer_replayed_records_total") > 0 and metric(http, "drover_buffer_records") == 0
                    and metric(http, "drover_buffer_bytes") < (1 << 20)):
                break
            time.sleep(0.05)  # a sampling period, not synchronisation
        drained = time.monotonic() - started
        replayed = metric(http, "drover_buffer_replayed_records_total")
        return backlog, accepted, idle, peak, drained, replayed
    finally:
        engine.cleanup()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    smoke = "--smoke" in sys.argv
    seconds = float(args[0]) if args else (2.0 if smoke else 6.0)
    gigabytes = float(args[1]) if len(args) > 1 else (0.02 if smoke else 1.0)
    rows = []
    for connections in (64,) if smoke else (64, 8):
        memory, f0 = b17(seconds, None, connections)
        batch, f1 = b17(seconds, {"type": "disk", "sync": "batch"}, connections)
        rows.append(f"| B17 OTLP/HTTP logs in over {connections} connections with `type: disk, sync: batch`, logs/s on "
                    f"one core ({f1} failed) | {batch:,.0f} | {memory:,.0f} (`type: memory`, {f0} failed) | "
                    f"{batch / memory:.2f} | >= 0.70 |")
        if not smoke or connections == 64:
            always, f2 = b17(seconds, {"type": "disk", "sync": "always"}, connections)
            rows.append(f"| B17 the same with `sync: always` ({f2} failed) | {always:,.0f} | {memory:,.0f} | "
                        f"{always / memory:.2f} | reported |")
    backlog, accepted, idle, peak, drained, replayed = b18(gigabytes)
    print("| figure | drover | baseline | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print(f"| B18 droverd start to the first new request answered, {backlog / (1 << 30):.2f} GiB unsettled on disk "
          f"| {accepted * 1000:,.0f} ms | | | < 1 s |")
    print(f"| B18 RSS of droverd + the instance while it is read back, kB | {peak:,} | {idle:,} (idle) | "
          f"{peak / idle:.2f} | < 2 (Fluent Bit: 4.6) |")
    print(f"| B18 the backlog read back and exported: {replayed:,} records | {drained:.1f} s | | | reported |")
    if smoke:
        assert memory > 0 and batch > 0 and always > 0 and replayed > 0, "every path moved records"


if __name__ == "__main__":
    main()
