#!/usr/bin/env python3
"""B16: what `ack: true` costs an isolated request. A receiver:otlp on one
core posts into exporter:file, or into exporter:otlp (batch max_delay_ms 10)
whose backend is a local OTLP stand-in (capture.py); the same requests with
ack: false in the same run. Each request is alone (the loop is idle before
it: 20 ms apart), on a kept-alive connection. Goal (issue 24): p99 of ack:
true <= max_delay_ms + 5 ms (exporter:otlp), i.e. the answer goes out once
the export is done, not at the loop's next wake-up.

Usage: bench/ack_latency.py [N]   (default 200 requests per case)"""

import http.client
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from capture import Capture  # noqa: E402
from harness import Admin, Engine, engine_yaml, free_port  # noqa: E402

BODY = b'{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"one"}}]}]}]}'


def spec(port, ack, exporter, backend, out_dir):
    out = ({"type": "exporter:file", "config": {"path": f"{out_dir}/b16.ndjson"}} if exporter == "file" else
           {"type": "exporter:otlp", "config": {"endpoint": backend, "encoding": "json",
                                                "batch": {"max_delay_ms": 10}}})
    return {"pipeline": {"cores": {"count": 1}, "nodes": {
        "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}", "ack": ack}, "to": ["out"]},
        "out": out}}}


def measure(port, n):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    took = []
    for _ in range(n):
        time.sleep(0.02)
        start = time.perf_counter()
        conn.request("POST", "/v1/logs", body=BODY, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
        took.append((time.perf_counter() - start) * 1000)
    conn.close()
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    admin_port = free_port()
    engine = Engine(engine_yaml().replace("HTTP", str(admin_port))).start()
    backend = Capture()
    rows = []
    try:
        admin = Admin(engine, admin_port)
        admin.wait_ready()
        for exporter in ("file", "otlp"):
            for ack in (False, True):
                port = free_port()
                body = spec(port, ack, exporter, backend.url(), engine.out_dir)
                status, reply, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/b16", body=body, timeout=30)
                assert status == 200, reply
                p50, p99 = measure(port, n)
                rows.append((exporter, ack, p50, p99))
                admin.http("DELETE", "/api/v1/groups/default/pipelines/b16", timeout=30)
    finally:
        backend.close()
        engine.cleanup()
    print("| B16 isolated request into | ack | p50 | p99 | goal |")
    print("| --- | --- | ---: | ---: | --- |")
    for exporter, ack, p50, p99 in rows:
        goal = "" if not ack else ("p99 <= 15 ms (max_delay_ms 10 + 5)" if exporter == "otlp" else "p99 <= 5 ms")
        print(f"| exporter:{exporter} | {str(ack).lower()} | {p50:.2f} ms | {p99:.2f} ms | {goal} |")


if __name__ == "__main__":
    main()
