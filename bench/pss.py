#!/usr/bin/env python3
"""B36: what a node-agent-shaped engine costs in memory, as proportional
set size (PSS: each shared page divided among the processes that map it,
so shared libraries count once, unlike RSS) summed over droverd and every
process it runs: pod logs (receiver:file, CRI) on 2 cores, OTLP on 2
cores, syslog on 1 — 8 processes with the broker and the zygote. Idle,
then while 2,000 CRI lines a second are appended for SECONDS.

Usage: bench/pss.py [SECONDS] [--smoke]   (default 10)

A guard, not a speed: past 32 MiB idle or 64 MiB under load it says so
and exits 1 (issue 55: keep the footprint where it is)."""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, children_of, engine_yaml, free_port, wait_until  # noqa: E402

GUARD_IDLE_MIB, GUARD_LOAD_MIB, RATE = 32, 64, 2000

PIPELINES = """
      pods:
        cores: {count: 2}
        nodes:
          in: {type: "receiver:file", config: {include: ["LOGS/*.log"], format: cri, start_at: beginning}, to: [out]}
          out: {type: "exporter:null"}
      otlp:
        cores: {count: 2}
        nodes:
          in: {type: "receiver:otlp", config: {endpoint: "127.0.0.1:OTLP", grpc_endpoint: "127.0.0.1:GRPC"}, to: [out]}
          out: {type: "exporter:null"}
      syslog:
        cores: {count: 1}
        nodes:
          in: {type: "receiver:syslog", config: {endpoint: "udp://127.0.0.1:SYSLOG"}, to: [out]}
          out: {type: "exporter:null"}
"""


def descendants(pid):
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children_of(p)
    return found


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def summed(pid):
    pids = descendants(pid)
    return len(pids), sum(pss_kib(p) for p in pids) / 1024


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else 10.0
    logs = tempfile.mkdtemp(prefix="drv-pss-")
    http = free_port()
    text = engine_yaml(PIPELINES.replace("LOGS", logs).replace("OTLP", str(free_port()))
                       .replace("GRPC", str(free_port())).replace("SYSLOG", str(free_port())))
    engine = Engine(text.replace("HTTP", str(http))).start()
    try:
        admin = Admin(engine, http)
        admin.wait_ready(30)
        wait_until(lambda: len(descendants(engine.pid)) >= 8, 20, "8 processes")
        time.sleep(2.0)  # start-up work done: idle
        processes, idle = summed(engine.pid)
        files = [open(os.path.join(logs, f"pod-{i}.log"), "a") for i in range(2)]
        line = 0
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            for f in files:
                f.write("".join(f"2026-11-29T00:00:00.000000000Z stdout F line {line + k} of a pod's log, as "
                                f"applications write them\n" for k in range(RATE // 20 // len(files))))
                f.flush()
            line += RATE // 20
            time.sleep(0.05)  # the pace itself: 2,000 lines a second
        _, loaded = summed(engine.pid)
        for f in files:
            f.close()
        read = wait_until(lambda: (lambda n: n if n >= line else None)(
            admin.http("GET", "/api/v1/groups/default/pipelines/pods/status")[1]["totals"]["records_in"]), 30,
            "the lines read")
    finally:
        engine.cleanup()
    print("| figure | value | guard |")
    print("| --- | ---: | --- |")
    print(f"| B36 node agent ({processes} processes) summed PSS, idle | {idle:.1f} MiB | < {GUARD_IDLE_MIB} MiB |")
    print(f"| B36 summed PSS at {RATE} CRI lines/s for {seconds:.0f} s ({read} read) | {loaded:.1f} MiB | "
          f"< {GUARD_LOAD_MIB} MiB |")
    if idle > GUARD_IDLE_MIB or loaded > GUARD_LOAD_MIB:
        print(f"B36 footprint past its guard ({GUARD_IDLE_MIB} / {GUARD_LOAD_MIB} MiB): FAILED")
        sys.exit(1)
    print(f"B36 footprint within its guard ({GUARD_IDLE_MIB} / {GUARD_LOAD_MIB} MiB)")


if __name__ == "__main__":
    main()
