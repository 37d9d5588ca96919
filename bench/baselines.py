#!/usr/bin/env python3
"""B3 spawn to ready and B4 crash restart, drover against the supervisors
people use today (Debian's supervisord and s6).

Usage: bench/baselines.py [N]   (default 10 rounds each; run after `make build`)

B3 drover: PUT create of a 2-core pipeline with wait=true, until both
   instances are ready (health-gated: each opened its exporter and said READY).
   supervisord: `start` of two programs over its XML-RPC socket until RUNNING
   (startsecs=0). s6: `s6-svc -u` of two services, then `s6-svwait -U` (ready by
   notification-fd).
B4 SIGKILL of one instance/program/service until a replacement is ready again.
   Each round waits 1.1 s first: s6-supervise never restarts a service sooner
   than 1 s after its previous start, and a one-off crash is what is measured.

The baselines' services are `sleep` (and a shell that signals readiness): they
do no work to get ready, drover's instances do."""

import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, children_of, cmdline, engine_yaml, free_port, wait_until  # noqa: E402
from supervisord import Supervisord  # noqa: E402

CONFIG = engine_yaml()


def ms(start):
    return (time.perf_counter() - start) * 1000


def drover(rounds):
    port = free_port()
    engine = Engine(CONFIG.replace("HTTP", str(port))).start()
    b3, b4 = [], []
    try:
        Admin(engine, port).wait_ready()
        conn = http.client.HTTPConnection("127.0.0.1", port)
        spec = {"pipeline": {"cores": {"count": 2}, "nodes": {
            "g": {"type": "receiver:generator", "config": {"rate": 10}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": engine.out_dir + "/{core}.ndjson"}}},
            # a 1 s restart window: each paced kill is a one-off crash, not a crash loop
            "policies": {"restart": {"window_secs": 1, "max_restarts": 100}}}}
        for i in range(rounds):
            start = time.perf_counter()
            conn.request("PUT", f"/api/v1/groups/default/pipelines/p{i}", body=json.dumps(spec),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            body = json.loads(resp.read())
            assert resp.status == 200 and body["state"] == "succeeded", body
            b3.append(ms(start))
        ready = re.compile(r"^(\S+) INFO droverd: instance ready instance=default/p0@1#0", re.M)
        for i in range(rounds):
            time.sleep(1.1)
            count = len(ready.findall(engine.log_text()))
            pid = engine.instances()["default/p0@1#0"]
            start = time.perf_counter()
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: len(ready.findall(engine.log_text())) > count, 10, "replacement", interval=0.0005)
            b4.append(ms(start))
    finally:
        engine.cleanup()
    return b3, b4


def supervisor(rounds):
    sup = Supervisord({name: ("sleep 3600", False) for name in ("a", "b")})
    b3, b4 = [], []
    try:
        rpc = sup.start().rpc
        for i in range(rounds):
            start = time.perf_counter()
            rpc.supervisor.startProcess("a", True)  # wait=True: returns once RUNNING
            rpc.supervisor.startProcess("b", True)
            b3.append(ms(start))
            rpc.supervisor.stopProcess("a", True)
            rpc.supervisor.stopProcess("b", True)
        rpc.supervisor.startProcess("a", True)
        for i in range(rounds):
            time.sleep(1.1)
            pid = rpc.supervisor.getProcessInfo("a")["pid"]
            start = time.perf_counter()
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: (lambda info: info["statename"] == "RUNNING" and info["pid"] != pid)(
                rpc.supervisor.getProcessInfo("a")), 10, "supervisord restart", interval=0.0005)
            b4.append(ms(start))
    finally:
        sup.stop()
    return b3, b4


def s6(rounds):
    d = tempfile.mkdtemp(prefix="drv-s6-")
    for name in ("a", "b"):
        svc = os.path.join(d, name)
        os.makedirs(svc)
        with open(os.path.join(svc, "run"), "w") as f:
            f.write("#!/bin/sh\necho >&3\nexec sleep 3600\n")  # ready at once, via notification-fd
        os.chmod(os.path.join(svc, "run"), 0o755)
        with open(os.path.join(svc, "notification-fd"), "w") as f:
            f.write("3\n")
        open(os.path.join(svc, "down"), "w").close()
    scan = subprocess.Popen(["s6-svscan", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    services = [os.path.join(d, n) for n in ("a", "b")]
    b3, b4 = [], []
    try:
        wait_until(lambda: all(os.path.exists(os.path.join(s, "supervise", "status")) for s in services), 10,
                   "s6-supervise up")
        for i in range(rounds):
            start = time.perf_counter()
            for svc in services:  # this s6-svc takes one service per call
                subprocess.run(["s6-svc", "-u", svc], check=True)
            subprocess.run(["s6-svwait", "-U", *services], check=True, timeout=10)
            b3.append(ms(start))
            for svc in services:
                subprocess.run(["s6-svc", "-d", svc], check=True)
            subprocess.run(["s6-svwait", "-D", *services], check=True, timeout=10)
        subprocess.run(["s6-svc", "-u", services[0]], check=True)
        subprocess.run(["s6-svwait", "-U", services[0]], check=True, timeout=10)
        for i in range(rounds):
            time.sleep(1.1)
            pid = int(subprocess.run(["s6-svstat", "-o", "pid", services[0]], capture_output=True,
                                     text=True).stdout.strip())
            with open(f"/proc/{pid}/stat") as f:
                supervise = int(f.read().rsplit(")", 1)[1].split()[1])
            start = time.perf_counter()
            os.kill(pid, signal.SIGKILL)
            # The run script signals readiness, then execs sleep: a new sleep
            # under s6-supervise is a ready replacement. (s6-svwait -d would
            # miss a down state that is already over.)
            wait_until(lambda: any(c != pid and cmdline(c) == "sleep" for c in children_of(supervise)), 10,
                       "s6 restart", interval=0.0005)
            b4.append(ms(start))
    finally:
        for svc in services:
            subprocess.run(["s6-svc", "-dx", svc], capture_output=True)
        scan.send_signal(signal.SIGTERM)
        scan.wait(timeout=10)
        shutil.rmtree(d, ignore_errors=True)
    return b3, b4


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    d3, d4 = drover(rounds)
    v3, v4 = supervisor(rounds)
    s3, s4 = s6(rounds)
    med = statistics.median
    p99 = lambda xs: sorted(xs)[min(len(xs) - 1, int(len(xs) * 0.99))]  # noqa: E731
    print("| figure | drover | supervisord | s6 | ratio to the best baseline | goal |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| B3 spawn to ready, 2 instances, median | {med(d3):.1f} ms | {med(v3):.1f} ms | {med(s3):.1f} ms | "
          f"{med(d3) / min(med(v3), med(s3)):.2f} | < 10 ms |")
    print(f"| B4 SIGKILL to ready, median | {med(d4):.1f} ms | {med(v4):.1f} ms | {med(s4):.1f} ms | "
          f"{med(d4) / min(med(v4), med(s4)):.2f} | < 10 ms |")
    print(f"| B4 SIGKILL to ready, p99 | {p99(d4):.1f} ms | {p99(v4):.1f} ms | {p99(s4):.1f} ms | "
          f"{p99(d4) / min(p99(v4), p99(s4)):.2f} | |")


if __name__ == "__main__":
    main()
