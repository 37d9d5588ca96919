#!/usr/bin/env python3
"""B9, B10, B12: real protocols in and out, each against a limit measured in
the same run.

B9  OTLP/HTTP logs ingest: drover-bench otlp-post sends protobuf requests of
    100 ~300-byte LogRecords over 8 keep-alive connections to receiver:otlp
    (one instance) -> exporter:null. Limit: drover-bench otlp-loop, which
    only unpacks and packs the same request with protobuf-c on one core.
B10 syslog UDP ingest: drover-bench udp-send floods receiver:syslog (one
    instance) -> exporter:null with RFC 5424 datagrams. Limit: drover-bench
    udp-recv, a bare recvmmsg loop, fed the same way.
B12 exporter:otlp into drover's own receiver:otlp: receiver:generator (flat
    out, core 0) -> exporter:otlp -> receiver:otlp (core 1) -> exporter:null.
    Against the same protobuf-c limit as B9.

Usage: bench/ingest.py [SECONDS] [--smoke]   (default 6 s per run)

drover's figures are the rise of drover_instance_records_in_total (of the
receiving pipeline) between two samples of /metrics, one second in and at
the end."""

import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, BIN, Engine, engine_yaml, free_port  # noqa: E402

BENCH = os.path.join(BIN, "drover-bench")
# The instance measured runs on CPU 0: load generators run on CPU 1, and
# the limits on CPU 0 with their load on CPU 1, so both sides get the same.
PINNED = len(os.sched_getaffinity(0)) >= 2 and {0, 1} <= os.sched_getaffinity(0)
LOAD = ["taskset", "-c", "1", BENCH] if PINNED else [BENCH]
ON_0 = ["taskset", "-c", "0", BENCH] if PINNED else [BENCH]
BODY = ("GET /api/v1/items/42 served in 12 ms for user 7f3a2c by web-17.example.internal; cache=miss upstream=db-3 "
        "rows=17 bytes=4096 trace sampled; request accepted and answered with 200 OK after auth and validation passed")


def records_in(http, pipeline):
    text = urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=5).read().decode()
    return sum(int(v) for v in re.findall(
        r'^drover_instance_records_in_total\{[^}]*pipeline="%s"[^}]*\} (\d+)$' % pipeline, text, re.M))


def rate(http, pipeline, seconds):
    time.sleep(1.0)  # warm-up before the first sample (a measurement window, not synchronisation)
    t0, c0 = time.monotonic(), records_in(http, pipeline)
    time.sleep(max(seconds - 1.5, 0.5))
    t1, c1 = time.monotonic(), records_in(http, pipeline)
    return (c1 - c0) / (t1 - t0)


def engine_with(pipelines):
    http = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n").replace("HTTP", str(http))).start()
    admin = Admin(engine, http)
    admin.wait_ready()
    for name, spec in pipelines.items():
        status, body, _ = admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec)
        assert status == 200, body
    return engine, http


def pipeline(nodes, core):
    return {"pipeline": {"cores": {"set": [core]}, "nodes": nodes}}


def limit(seconds):
    out = subprocess.run([*ON_0, "otlp-loop", str(seconds)], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"logs_per_sec=([\d.]+)", out).group(1))


def otlp_ingest(seconds, tool):
    """receiver:otlp (HTTP on PORT, gRPC on GRPC_PORT) on CPU 0 -> exporter:null, under drover-bench's load
    (tool: its arguments, with PORT and GRPC_PORT standing for the node's two endpoints): its records/s,
    and the load's failed requests or calls."""
    port, grpc_port = free_port(), free_port()
    engine, http = engine_with({"b9": pipeline({
        "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}",
                                                   "grpc_endpoint": f"127.0.0.1:{grpc_port}"}, "to": ["out"]},
        "out": {"type": "exporter:null"}}, 0)})
    try:
        args = [a.replace("GRPC_PORT", str(grpc_port)).replace("PORT", str(port)) for a in tool]
        load = subprocess.Popen([*LOAD, *args], stdout=subprocess.PIPE, text=True)
        value = rate(http, "b9", seconds)
        out, _ = load.communicate(timeout=seconds + 15)
        return value, int(re.search(r"failed=(\d+)", out).group(1))
    finally:
        engine.cleanup()


def b9(seconds):
    return otlp_ingest(seconds, ["otlp-post", "http://127.0.0.1:PORT/v1/logs", str(seconds), "8", "0"])


def b10(seconds):
    port = free_port()
    engine, http = engine_with({"b10": pipeline({
        "in": {"type": "receiver:syslog", "config": {"endpoint": f"udp://127.0.0.1:{port}"}, "to": ["out"]},
        "out": {"type": "exporter:null"}}, 0)})
    try:
        load = subprocess.Popen([*LOAD, "udp-send", "127.0.0.1", str(port), str(seconds)], stdout=subprocess.PIPE)
        value = rate(http, "b10", seconds)
        load.wait(timeout=seconds + 15)
    finally:
        engine.cleanup()
    port = free_port()
    recv = subprocess.Popen([*ON_0, "udp-recv", str(port), str(seconds)], stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)  # let it bind: datagrams sent before are lost, which only lowers the limit
    load = subprocess.Popen([*LOAD, "udp-send", "127.0.0.1", str(port), str(seconds)], stdout=subprocess.PIPE)
    out, _ = recv.communicate(timeout=seconds + 15)
    load.wait(timeout=seconds + 15)
    return value, float(re.search(r"datagrams_per_sec=([\d.]+)", out).group(1))


def b12(seconds):
    port = free_port()
    record = {"signal": "log", "severity_number": 9, "severity_text": "INFO", "body": BODY,
              "trace_id": "0102030405060708090a0b0c0d0e0f10", "span_id": "0102030405060708",
              "resource": {"service.name": "bench"}, "scope": {"name": "drover-bench", "version": "", "attributes": {}}}
    engine, http = engine_with({
        "b12back": pipeline({"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"},
                                    "to": ["out"]}, "out": {"type": "exporter:null"}}, 1),
        "b12front": pipeline({"gen": {"type": "receiver:generator", "config": {"rate": 0, "record": record},
                                      "to": ["out"]},
                              "out": {"type": "exporter:otlp", "config": {"endpoint": f"http://127.0.0.1:{port}",
                                                                          "compression": "none"}}}, 0)})
    try:
        return rate(http, "b12back", seconds)
    finally:
        engine.cleanup()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    smoke = "--smoke" in sys.argv
    seconds = float(args[0]) if args else (2.0 if smoke else 6.0)
    top = limit(seconds)
    otlp, failed = b9(seconds)
    syslog, udp = b10(seconds)
    out = b12(seconds)
    print("| figure | drover | limit | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| B9 OTLP/HTTP logs in, logs/s on one core ({failed} failed requests) | {otlp:,.0f} | {top:,.0f} "
          f"(protobuf-c unpack + pack loop) | {otlp / top:.2f} | >= 0.50 and >= 600,000 (issue 24) |")
    print(f"| B10 syslog over UDP in, messages/s on one core | {syslog:,.0f} | {udp:,.0f} (bare recvmmsg loop) | "
          f"{syslog / udp:.2f} | >= 0.50 |")
    print(f"| B12 exporter:otlp into receiver:otlp, records/s | {out:,.0f} | {top:,.0f} "
          f"(protobuf-c unpack + pack loop) | {out / top:.2f} | >= 0.40 (issue 24) |")
    if smoke:
        assert otlp > 0 and syslog > 0 and out > 0 and failed == 0, "every path moved records"


if __name__ == "__main__":
    main()
