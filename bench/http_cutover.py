#!/usr/bin/env python3
"""B11 cutover under HTTP load: drover-bench otlp-post sends OTLP/HTTP
protobuf requests of 10 LogRecords (each with its own seq) at a fixed rate
over 8 keep-alive connections to receiver:otlp (2 instances) ->
exporter:file, while REPLACES rolling replaces (PUT) run back to back.

Reports failed requests (refused, reset, non-2xx), records answered 200 but
never exported (lost), exported twice (duplicated), and the p99 request
latency while a replace runs against outside them.

Usage: bench/http_cutover.py [REPLACES] [RATE]   (default 20 replaces, 500 requests/s)"""

import glob
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, BIN, Engine, engine_yaml, free_port, read_ndjson, wait_until  # noqa: E402

BENCH = os.path.join(BIN, "drover-bench")
RECORDS = 10


def p99(values):
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else (values[0] if values else 0.0)


def main():
    args = sys.argv[1:]
    replaces = int(args[0]) if args else 20
    rate = float(args[1]) if len(args) > 1 else 500.0
    http, port = free_port(), free_port()
    engine = Engine(engine_yaml().replace("HTTP", str(http))).start()
    try:
        admin = Admin(engine, http)
        admin.wait_ready()

        def put(tag):
            spec = {"pipeline": {"cores": {"count": 2}, "nodes": {
                "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["t"]},
                "t": {"type": "processor:transform", "config": {"set": {"tag": tag}}, "to": ["out"]},
                "out": {"type": "exporter:file",
                        "config": {"path": f"{engine.out_dir}/b11-{{core}}-{{generation}}.ndjson"}}}}}
            status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/b11", body=spec, timeout=60)
            assert status == 200, body

        put("v0")
        log = os.path.join(engine.dir, "requests.log")
        seconds = 3 + replaces * 1.0
        load = subprocess.Popen([BENCH, "otlp-post", f"http://127.0.0.1:{port}/v1/logs", str(seconds), "8",
                                 str(rate), str(RECORDS), log], stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)  # load outside cutovers first (a measurement window, not synchronisation)
        windows = []
        for i in range(replaces):
            start = time.monotonic()
            put(f"v{i + 1}")
            windows.append((start, time.monotonic()))
        out, _ = load.communicate(timeout=seconds + 60)
        requests = []
        with open(log) as f:
            for line in f:
                started, latency, status, first, connects = line.split()
                requests.append((float(started), float(latency), int(status), int(first), int(connects)))
        acked = {first + k for _, _, status, first, _ in requests if status == 200 for k in range(RECORDS)}

        def exported():
            rows = []
            for path in glob.glob(f"{engine.out_dir}/b11-*.ndjson"):
                rows += [r["attributes"]["seq"] for r in read_ndjson(path)]
            return rows if set(rows) >= acked else None
        try:
            seqs = wait_until(exported, 30, "every acknowledged record in the files")
        except AssertionError:
            seqs = []
            for path in glob.glob(f"{engine.out_dir}/b11-*.ndjson"):
                seqs += [r["attributes"]["seq"] for r in read_ndjson(path)]
        def in_cutover(r):
            return any(a <= r[0] <= b for a, b in windows)
        during = [r[1] for r in requests if in_cutover(r)]
        outside = [r[1] for r in requests if not in_cutover(r)]
        # Where the time goes: requests that had to open a connection (theirs
        # was closed by a draining instance) against those that reused one.
        reconnected = [r[1] for r in requests if in_cutover(r) and r[4] > 0]
        reused = [r[1] for r in requests if in_cutover(r) and r[4] == 0]
        failed = sum(1 for r in requests if r[2] != 200)
        lost = len(acked - set(seqs))
        duplicated = len(seqs) - len(set(seqs))
        print("| figure | value | goal |")
        print("| --- | --- | --- |")
        print(f"| B11 replaces under load | {replaces} at {rate:.0f} requests/s ({rate * RECORDS:.0f} records/s), "
              f"{len(requests)} requests | |")
        print(f"| B11 failed requests | {failed} | 0 |")
        print(f"| B11 records lost | {lost} | 0 |")
        print(f"| B11 records duplicated | {duplicated} | 0 |")
        print(f"| B11 p99 latency during cutovers / outside | {p99(during):.1f} ms / {p99(outside):.1f} ms "
              f"({p99(during) / max(p99(outside), 0.001):.2f}x; {len(during)} and {len(outside)} requests) | < 2x |")
        print(f"| B11 during cutovers: p99 of requests that reused a connection / opened one | {p99(reused):.1f} ms "
              f"({len(reused)}) / {p99(reconnected):.1f} ms ({len(reconnected)}) | |")
        print(f"| B11 mean replace time | {statistics.mean(b - a for a, b in windows):.2f} s | |")
    finally:
        engine.cleanup()


if __name__ == "__main__":
    main()
