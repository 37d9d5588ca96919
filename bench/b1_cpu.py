#!/usr/bin/env python3
"""Where B1's CPU goes, per process: runs B1's pipeline on 1 core with
drover-bench pushing at full speed, and reads the CPU time and context
switches of the broker, the instance, the producer and droverd (every
thread of each, from /proc/PID/task/*) over 3 s of steady load. What
showed that the instance's own ZeroMQ I/O thread took a third of its core
before the data ring (docs/benchmarks.md, B1).

Usage: bench/b1_cpu.py [CORES]   (default 1)"""

import os
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "../tests/integration"))
import throughput  # noqa: E402
from harness import Admin, Engine, children_of, cmdline, free_port, wait_until  # noqa: E402

WINDOW = 3.0


def cpu_ticks(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        fields = open(f"/proc/{pid}/task/{task}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def switches(pid):
    voluntary = involuntary = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in open(f"/proc/{pid}/task/{task}/status"):
            if line.startswith("voluntary_ctxt_switches"):
                voluntary += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches"):
                involuntary += int(line.split()[1])
    return voluntary + involuntary


def main():
    cores = sys.argv[1] if len(sys.argv) > 1 else "1"
    http, port = free_port(), free_port()
    engine = Engine(throughput.CONFIG.replace("HTTP", str(http)).replace("PORT", str(port))
                    .replace("CORES", cores)).start()
    try:
        Admin(engine, http).wait_ready()
        producer = subprocess.Popen([throughput.BENCH, "produce", f"tcp://127.0.0.1:{port}", str(WINDOW + 3)],
                                    stdout=subprocess.DEVNULL)
        wait_until(lambda: throughput.records_in(http) > 0, 10, "records flowing")
        time.sleep(1.0)  # warm-up before the window (a measurement window, not synchronisation)
        procs = {"broker": next(c for c in children_of(engine.pid) if cmdline(c) == "drover-broker"),
                 "producer": producer.pid, "droverd": engine.pid}
        for name, pid in engine.instances().items():
            procs[name] = pid
        hz = os.sysconf("SC_CLK_TCK")
        before = {k: (cpu_ticks(p), switches(p)) for k, p in procs.items()}
        time.sleep(WINDOW)
        after = {k: (cpu_ticks(p), switches(p)) for k, p in procs.items()}
        print("| process | CPU (of one core) | context switches/s |")
        print("| --- | ---: | ---: |")
        for k in procs:
            cpu = (after[k][0] - before[k][0]) / hz / WINDOW
            cs = (after[k][1] - before[k][1]) / WINDOW
            print(f"| {k} | {cpu:.0%} | {cs:,.0f} |")
        producer.wait(timeout=WINDOW + 20)
    finally:
        engine.cleanup()


if __name__ == "__main__":
    main()
