#!/usr/bin/env python3
"""B22: a healthy branch beside a dead one (issue 37). One core, a generator
as fast as it goes, fanned out to exporter:file; the figure is the file's
records/s (its node's records_out over a window, from /status) with a
second branch to an exporter:http whose backend is down (its queue, 8 GiB, large
enough not to fill in the window) against the same pipeline without that
branch, in the same run, interleaved. Goal: >= 0.9.

Then OTLP/HTTP under drover-bench otlp-post (8 connections, 100 logs a
request) into receiver:otlp fanned out to exporter:null, alone and beside
one exporter:http whose backend is down, with a memory buffer; and with a
disk buffer (the log is every exporter's queue, docs/operations.md
"Positions in a disk buffer") alone, beside one and beside two: the
healthy branch's records/s against alone (goal >= 0.9), and the bytes the
log holds at the end of the window against the request bytes accepted in
it (goal <= 1.2 whatever the number of exporters).

Usage: bench/branches.py [SECONDS] [--smoke]   (default a 5 s window, best of 3)"""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402
from ingest import LOAD  # noqa: E402


def spec(out, dead_port):
    nodes = {"g": {"type": "receiver:generator", "config": {"rate": 0, "record": {"msg": "x" * 100, "level": 3}},
                   "to": ["file"] + (["http"] if dead_port else [])},
             "file": {"type": "exporter:file", "config": {"path": f"{out}/healthy.ndjson"}}}
    if dead_port:
        nodes["http"] = {"type": "exporter:http", "config": {
            "endpoint": f"http://127.0.0.1:{dead_port}/in", "retry": {"initial_ms": 100, "max_ms": 1000,
                                                                      "max_elapsed_secs": 0},
            "queue": {"max_bytes": 8 << 30}}}
    return {"pipeline": {"cores": {"count": 1}, "nodes": nodes}}


def rate(dead, seconds):
    port = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n").replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/b",
                                     body=spec(engine.out_dir, free_port() if dead else None), timeout=30)
        assert status == 200, body

        def out():
            st = admin.http("GET", "/api/v1/groups/default/pipelines/b/status")[1]
            insts = st.get("instances") or [{}]
            return insts[0].get("nodes", {}).get("file", {}).get("records_out", 0)
        wait_until(lambda: out() > 0, 10, "records flowing")
        time.sleep(0.5)  # a benchmark's warm-up, not a synchronisation
        first, t0 = out(), time.monotonic()
        time.sleep(seconds)
        last, t1 = out(), time.monotonic()
        return (last - first) / (t1 - t0)
    finally:
        engine.stop()
        engine.cleanup()


def otlp_rate(dead, seconds, disk=True):
    """The healthy exporter:null's records/s with dead exporters beside it
    (their queue 2 GiB without a disk buffer: it does not fill in the
    window), and the log's bytes against those accepted (disk)."""
    port, otlp = free_port(), free_port()
    nodes = {"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{otlp}"},
                    "to": ["null"] + [f"dead{k}" for k in range(dead)]},
             "null": {"type": "exporter:null"}}
    for k in range(dead):
        nodes[f"dead{k}"] = {"type": "exporter:http", "config": {
            "endpoint": f"http://127.0.0.1:{free_port()}/in",
            "retry": {"initial_ms": 100, "max_ms": 1000, "max_elapsed_secs": 0}}}
        if not disk:
            nodes[f"dead{k}"]["config"]["queue"] = {"max_bytes": 8 << 30}
    spec = {"pipeline": {"cores": {"count": 1}, "nodes": nodes}}
    if disk:
        spec["pipeline"]["policies"] = {"buffer": {"type": "disk", "max_bytes": 8 << 30, "sync": "batch"}}
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n").replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/b", body=spec, timeout=30)
        assert status == 200, body

        def status_now():
            st = admin.http("GET", "/api/v1/groups/default/pipelines/b/status")[1]
            return st

        def out():
            insts = status_now().get("instances") or [{}]
            return insts[0].get("nodes", {}).get("null", {}).get("records_out", 0)
        load = subprocess.Popen([*LOAD, "otlp-post", f"http://127.0.0.1:{otlp}/v1/logs", str(seconds + 1.5), "8",
                                 "0"], stdout=subprocess.PIPE, text=True)
        wait_until(lambda: out() > 0, 10, "records flowing")
        time.sleep(0.5)  # a benchmark's warm-up, not a synchronisation
        first, t0 = out(), time.monotonic()
        time.sleep(seconds)
        last, t1 = out(), time.monotonic()
        text, _ = load.communicate(timeout=seconds + 20)
        accepted = int(re.search(r"ok_bytes=(\d+)", text).group(1))
        held = status_now().get("buffer", {}).get("bytes") or 0
        return (last - first) / (t1 - t0), held / accepted if accepted else 0
    finally:
        engine.stop()
        engine.cleanup()


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else 5.0
    rounds = 1 if smoke else 3
    alone, beside = 0.0, 0.0
    for _ in range(rounds):
        alone = max(alone, rate(False, seconds))
        beside = max(beside, rate(True, seconds))
    ratio = beside / alone if alone else 0
    print("| run | the file's records/s (one core) |")
    print("| --- | ---: |")
    print(f"| generator -> file | {alone:,.0f} |")
    print(f"| generator -> file + exporter:http whose backend is down | {beside:,.0f} |")
    print()
    print(f"B22 healthy branch beside a dead sibling / alone = {ratio:.2f} "
          f"(goal >= 0.9: {'met' if ratio >= 0.9 else 'missed'})")
    print()
    runs = {(False, 0): (0.0, 0.0), (False, 1): (0.0, 0.0), (True, 0): (0.0, 0.0), (True, 1): (0.0, 0.0),
            (True, 2): (0.0, 0.0)}
    if smoke:  # each kind of run once: it works, not how fast
        runs = {(False, 1): (0.0, 0.0), (True, 2): (0.0, 0.0)}
    for _ in range(rounds):
        for disk, dead in runs:
            got = otlp_rate(dead, seconds, disk)
            runs[disk, dead] = got if got[0] > runs[disk, dead][0] else runs[disk, dead]
    print("| OTLP/HTTP in (8 connections) | exporter:null's records/s | log bytes / bytes accepted |")
    print("| --- | ---: | ---: |")
    for (disk, dead), (value, held) in runs.items():
        print(f"| {'disk' if disk else 'memory'} buffer, beside {dead} dead exporter:http | {value:,.0f} | "
              f"{f'{held:.2f}' if disk else ''} |")
    print()
    if smoke:
        return
    alone = runs[False, 0][0]
    r = runs[False, 1][0] / alone if alone else 0
    print(f"B22 OTLP, memory: healthy branch beside a dead sibling / alone = {r:.2f} "
          f"(goal >= 0.9: {'met' if r >= 0.9 else 'missed'})")
    alone = runs[True, 0][0]
    for dead in (1, 2):
        r = runs[True, dead][0] / alone if alone else 0
        held = runs[True, dead][1]
        print(f"B22 OTLP, disk: healthy branch beside {dead} dead / alone = {r:.2f} "
              f"(goal >= 0.9: {'met' if r >= 0.9 else 'missed'}); log bytes / accepted = {held:.2f} "
              f"(goal <= 1.2: {'met' if 0 < held <= 1.2 else 'missed'})")

if __name__ == "__main__":
    main()
