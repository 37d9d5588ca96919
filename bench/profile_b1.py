#!/usr/bin/env python3
"""Where B1's time goes: samples the broker and a 1-core worker with
`perf record -e cpu-clock` (software clock: this VM has no hardware counters)
for 4 s while drover-bench pushes at full speed, into /tmp/perf.data.

Usage: bench/profile_b1.py && perf report -i /tmp/perf.data --no-children --sort comm,dso -g none"""
import os, sys, subprocess, time
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here); sys.path.insert(0, os.path.join(here, "../tests/integration"))
import throughput
from harness import Admin, Engine, children_of, cmdline, free_port  # noqa: E402
http, port = free_port(), free_port()
e = Engine(throughput.CONFIG.replace("HTTP", str(http)).replace("PORT", str(port)).replace("CORES", "1")).start()
Admin(e, http).wait_ready()
prod = subprocess.Popen([throughput.BENCH, "produce", f"tcp://127.0.0.1:{port}", "8"], stdout=subprocess.DEVNULL)
time.sleep(1.5)
broker = next(c for c in children_of(e.pid) if cmdline(c) == "drover-broker")
worker = e.instances()["default/b1@1#0"]
rec = subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-o", "/tmp/perf.data", "-p", f"{broker},{worker}", "--", "sleep", "4"], capture_output=True, text=True)
prod.wait()
e.cleanup()
print(rec.stderr[-300:])
