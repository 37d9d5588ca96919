#!/usr/bin/env python3
"""B19, B20: OTLP over gRPC in, against OTLP/HTTP and the protobuf-c loop of
the same run.

B19 OTLP/gRPC logs ingest on one core: drover-bench grpc-call (libnghttp2,
    h2c) keeps 8 connections x 8 calls in flight of the otlp-post request
    (100 ~300-byte LogRecords) to receiver:otlp's grpc_endpoint (one
    instance, CPU 0) -> exporter:null. Against B9's OTLP/HTTP figure,
    measured again here the same way (drover-bench otlp-post, 8
    keep-alive connections, to the same node's HTTP endpoint), and the
    protobuf-c unpack + pack loop. Goal: >= 1.0x OTLP/HTTP and >= 600,000
    logs/s.
B20 OTLP/gRPC metrics ingest: the same, with requests of 100 gauge data
    points (two attributes each); points/s, with the protobuf-c loop of the
    metrics request (reported).

Usage: bench/grpc_ingest.py [SECONDS] [--smoke]   (default 6 s per run)"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ingest import ON_0, limit, otlp_ingest as ingest  # noqa: E402


def loop(seconds):
    out = subprocess.run([*ON_0, "metrics-loop", str(seconds)], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"points_per_sec=([\d.]+)", out).group(1))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    smoke = "--smoke" in sys.argv
    seconds = float(args[0]) if args else (2.0 if smoke else 6.0)
    s = str(seconds)
    top = limit(seconds)
    grpc_logs, grpc_failed = ingest(seconds, ["grpc-call", "127.0.0.1", "GRPC_PORT", s, "8", "8", "logs"])
    http_logs, http_failed = ingest(seconds, ["otlp-post", "http://127.0.0.1:PORT/v1/logs", s, "8", "0"])
    points_top = loop(seconds)
    points, points_failed = ingest(seconds, ["grpc-call", "127.0.0.1", "GRPC_PORT", s, "8", "8", "metrics"])
    print("| figure | drover | against | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| B19 OTLP/gRPC logs in, logs/s on one core ({grpc_failed} failed calls) | {grpc_logs:,.0f} | "
          f"{http_logs:,.0f} (OTLP/HTTP, {http_failed} failed) | {grpc_logs / http_logs:.2f} | "
          f">= 1.00 and >= 600,000 |")
    print(f"| B19 the same against the protobuf-c loop | {grpc_logs:,.0f} | {top:,.0f} (unpack + pack) | "
          f"{grpc_logs / top:.2f} | reported |")
    print(f"| B20 OTLP/gRPC metrics in, data points/s on one core ({points_failed} failed calls) | {points:,.0f} | "
          f"{points_top:,.0f} (protobuf-c unpack + pack of the metrics request) | {points / points_top:.2f} | "
          f"reported |")
    if smoke:
        assert grpc_logs > 0 and http_logs > 0 and points > 0, "every path moved records"
        assert grpc_failed == 0 and points_failed == 0 and http_failed == 0, "no call failed"


if __name__ == "__main__":
    main()
