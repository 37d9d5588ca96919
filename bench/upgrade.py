#!/usr/bin/env python3
"""B27 an upgrade of drover in place under load, against the restart it
replaces, in the same run (docs/benchmarks.md).

drover-bench otlp-post sends OTLP/HTTP protobuf requests of RECORDS
LogRecords (each with its own seq) at a fixed rate over 8 keep-alive
connections to receiver:otlp (2 instances) -> exporter:file, a pipeline of
the config file. droverd runs from an install directory. After 2 s of load:
  upgrade: the same source built under another version (build/tests/next)
           is moved over the installed files, then POST /api/v1/engine/upgrade,
           until it says succeeded;
  restart: SIGTERM to droverd, then droverd started again, until /readyz is 200
           (what upgrading the binaries took before: a restart).
Reports, for each: the longest gap between two answered requests (any
connection), failed requests (refused, reset, non-2xx), records answered
200 but never exported (lost) or exported twice, and how long it took.

Usage: bench/upgrade.py [RATE] [RECORDS] [--smoke]
       (default 1000 requests/s of 200 records: 200,000 records/s; --smoke: 3 s of load instead of 8)"""

import glob
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, BIN, Engine, engine_yaml, free_port, read_ndjson, wait_until  # noqa: E402

BENCH = os.path.join(BIN, "drover-bench")
NEXT = os.path.join(os.path.dirname(os.path.abspath(BIN)), "tests", "next")
PROGRAMS = ("droverd", "drover-worker", "drover-broker")


def install(source_dir, install_dir):
    for program in PROGRAMS:
        beside = os.path.join(install_dir, f".{program}.new")
        shutil.copy2(os.path.join(source_dir, program), beside)
        os.rename(beside, os.path.join(install_dir, program))


def run(kind, rate, records, seconds):
    install_dir = tempfile.mkdtemp(prefix="drv-b27-")
    install(BIN, install_dir)
    droverd = os.path.join(install_dir, "droverd")
    admin_port, port = free_port(), free_port()
    pipelines = f"""
      b27:
        cores: {{count: 2}}
        nodes:
          in: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{port}"}}, to: [out]}}
          out: {{type: "exporter:file", config: {{path: "{{OUT}}/b27-{{{{core}}}}-{{{{generation}}}}.ndjson"}}}}
"""
    engine = Engine(engine_yaml(pipelines).replace("HTTP", str(admin_port))).start(droverd=droverd)
    try:
        admin = Admin(engine, admin_port)

        def ready():
            try:
                return admin.http("GET", "/readyz", timeout=2)[0] == 200
            except (OSError, http.client.HTTPException):
                return False  # not listening yet, or going away
        wait_until(ready, 60, "the pipeline ready", interval=0.02)
        log = os.path.join(engine.dir, "requests.log")
        load = subprocess.Popen([BENCH, "otlp-post", f"http://127.0.0.1:{port}/v1/logs", str(seconds), "8",
                                 str(rate), str(records), log], stdout=subprocess.PIPE, text=True)
        time.sleep(min(2.0, seconds / 3))  # load before the change (a measurement window, not synchronisation)
        began = time.monotonic()
        if kind == "upgrade":
            install(NEXT, install_dir)
            status, body, _ = admin.http("POST", "/api/v1/engine/upgrade", body={})
            assert status == 202, body

            outcome = admin.wait_upgraded()["state"]
            assert outcome == "succeeded", outcome
        else:
            engine.stop()
            engine.start(droverd=droverd)
            wait_until(ready, 60, "droverd ready again", interval=0.02)
        took = time.monotonic() - began
        load.communicate(timeout=seconds + 60)
        requests = []
        with open(log) as f:
            for line in f:
                started, latency, status, first, _ = line.split()
                requests.append((float(started), float(latency) / 1000, int(status), int(first)))
        acked = {first + k for _, _, status, first in requests if status == 200 for k in range(records)}

        def exported(final=False):
            rows = []
            for path in glob.glob(f"{engine.out_dir}/b27-*.ndjson"):
                rows += [r["attributes"]["seq"] for r in read_ndjson(path)]
            return rows if final or set(rows) >= acked else None
        try:
            seqs = wait_until(exported, 30, "every acknowledged record in the files")
        except AssertionError:
            seqs = exported(final=True)
        answered = sorted(start + latency for start, latency, status, _ in requests if status == 200)
        gap = max((b - a for a, b in zip(answered, answered[1:])), default=0.0)
        return {"requests": len(requests), "failed": sum(1 for r in requests if r[2] != 200),
                "lost": len(acked - set(seqs)), "duplicated": len(seqs) - len(set(seqs)), "gap_ms": gap * 1000,
                "took_s": took}
    finally:
        engine.cleanup()
        shutil.rmtree(install_dir, ignore_errors=True)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rate = float(args[0]) if args else 1000.0
    records = int(args[1]) if len(args) > 1 else 200
    seconds = 3.0 if "--smoke" in sys.argv else 8.0
    upgrade = run("upgrade", rate, records, seconds)
    restart = run("restart", rate, records, seconds)
    print("| figure | upgrade in place | restart | goal |")
    print("| --- | --- | --- | --- |")
    print(f"| B27 load | {rate:.0f} requests/s of {records} records ({rate * records:,.0f} records/s), "
          f"{upgrade['requests']:,} requests | {restart['requests']:,} requests | |")
    print(f"| B27 longest gap between answered requests | {upgrade['gap_ms']:.1f} ms | {restart['gap_ms']:.1f} ms "
          f"| upgrade below restart ({upgrade['gap_ms'] / max(restart['gap_ms'], 0.001):.2f}x) |")
    print(f"| B27 failed requests | {upgrade['failed']} | {restart['failed']} | 0 for the upgrade |")
    print(f"| B27 records lost | {upgrade['lost']} | {restart['lost']} | 0 |")
    print(f"| B27 records duplicated | {upgrade['duplicated']} | {restart['duplicated']} | |")
    print(f"| B27 time to done (POST to succeeded; SIGTERM to ready) | {upgrade['took_s']:.2f} s | "
          f"{restart['took_s']:.2f} s | |")


if __name__ == "__main__":
    main()
