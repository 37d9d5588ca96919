#!/usr/bin/env python3
"""B5 footprint: resident memory of droverd + drover-broker + the worker
zygote (the engine's resident processes; instances not counted), idle (no
pipelines) and with two pipelines, and their wake-ups per second when idle;
baseline: supervisord (Debian's), idle with two programs.

Usage: bench/footprint.py [SECONDS]   (default 5 s of observation)

Wake-ups are context switches (voluntary + involuntary) summed over every
thread of the processes, from /proc/PID/task/*/status, over SECONDS."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, children_of, cmdline, engine_yaml, free_port, wait_until  # noqa: E402
from supervisord import Supervisord  # noqa: E402

IDLE = engine_yaml("PIPELINES")

TWO = """
      ticks:
        nodes:
          g: { type: receiver:generator, config: { rate: 10 }, to: [out] }
          out: { type: exporter:null }
      ingest:
        nodes:
          in: { type: receiver:zmq, config: { endpoint: "tcp://127.0.0.1:ZPORT" }, to: [out] }
          out: { type: exporter:null }
"""


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def uss_kb(pid):
    """Private memory (what this process alone costs), from smaps_rollup."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total


def switches(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if "ctxt_switches" in line:
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def wakeups(pids, seconds):
    before = sum(switches(p) for p in pids)
    time.sleep(seconds)  # the observation window itself
    return (sum(switches(p) for p in pids) - before) / seconds


def drover(pipelines, seconds):
    http = free_port()
    text = IDLE.replace("HTTP", str(http)).replace("PIPELINES", pipelines.replace("ZPORT", str(free_port())) or "{}")
    engine = Engine(text).start()
    try:
        Admin(engine, http).wait_ready()
        def resident():
            found = {cmdline(c): c for c in children_of(engine.pid)}
            return (found["drover-broker"], found["drover-zygote"]) if {"drover-broker", "drover-zygote"} <= set(
                found) else None
        broker, zygote = wait_until(resident, 5, "broker and zygote")
        time.sleep(1.0)  # let start-up work finish before observing idle behaviour
        pids = [engine.pid, broker, zygote]
        rate = wakeups(pids, seconds)
        return sum(rss_kb(p) for p in pids) / 1024, rate, sum(uss_kb(p) for p in pids) / 1024
    finally:
        engine.cleanup()


def supervisord(seconds):
    sup = Supervisord({name: ("sleep 3600", True) for name in ("a", "b")}).start()
    try:
        wait_until(lambda: len(children_of(sup.proc.pid)) == 2, 10, "supervisord's programs")
        time.sleep(1.0)  # let start-up work finish before observing idle behaviour
        pid = sup.proc.pid
        return rss_kb(pid) / 1024, wakeups([pid], seconds), uss_kb(pid) / 1024
    finally:
        sup.stop()


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    idle_mb, idle_wakeups, idle_uss = drover("", seconds)
    busy_mb, _, busy_uss = drover(TWO, seconds)
    sup_mb, sup_wakeups, sup_uss = supervisord(seconds)
    print("| figure | drover | baseline (supervisord) | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| B5 RSS droverd+broker+zygote, idle | {idle_mb:.1f} MB | {sup_mb:.1f} MB | {idle_mb / sup_mb:.2f} | < 8 MB |")
    print(f"| B5 RSS droverd+broker+zygote, 2 pipelines | {busy_mb:.1f} MB | {sup_mb:.1f} MB (2 programs) | "
          f"{busy_mb / sup_mb:.2f} | < 8 MB |")
    print(f"| B5 private memory (USS) droverd+broker+zygote, idle / 2 pipelines | {idle_uss:.1f} / {busy_uss:.1f} MB | "
          f"{sup_uss:.1f} MB | {busy_uss / sup_uss:.2f} | (RSS also counts shared libraries) |")
    print(f"| B5 wake-ups/s, idle | {idle_wakeups:.1f} | {sup_wakeups:.1f} | "
          f"{idle_wakeups / sup_wakeups if sup_wakeups else float('inf'):.2f} | < 5 |")


if __name__ == "__main__":
    main()
