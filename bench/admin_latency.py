#!/usr/bin/env python3
"""Latency of GET /status over the zmq admin socket and over HTTP, with two
pipelines running (a 2-core zmq pipeline and a 1-core generator).

Usage: bench/admin_latency.py [N] [WRK_SECS]
  (default 2000 requests per transport, then wrk on /readyz for 5 s)

Each transport keeps one connection open (a DEALER socket; an HTTP/1.1
keep-alive connection) and sends requests back to back, one at a time; the
figures include this Python client's own overhead, so they are an upper bound
on the engine's.

Then wrk (2 threads, 16 keep-alive connections) hammers GET /readyz for
WRK_SECS seconds: requests/s and wrk's latency percentiles."""

import http.client
import os
import re
import subprocess
import statistics
import sys
import time

import msgpack
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port  # noqa: E402

CONFIG = engine_yaml(pipelines="""
      ingest:
        cores: { count: 2 }
        nodes:
          in: { type: receiver:zmq, config: { endpoint: "tcp://127.0.0.1:ZPORT" }, to: [out] }
          out: { type: exporter:null }
      gen:
        nodes:
          g: { type: receiver:generator, config: { rate: 1000 }, to: [out] }
          out: { type: exporter:null }
""")


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    wrk_secs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    port = free_port()
    engine = Engine(CONFIG.replace("HTTP", str(port)).replace("ZPORT", str(free_port()))).start()
    try:
        Admin(engine, port).wait_ready()
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"ipc://{engine.run_dir}/admin.sock")
        request = msgpack.packb({"method": "GET", "path": "/status"})
        zmq_us = []
        for i in range(n + 100):
            start = time.perf_counter()
            sock.send(request)
            reply = msgpack.unpackb(sock.recv())
            elapsed = (time.perf_counter() - start) * 1e6
            assert reply["status"] == 200
            if i >= 100:  # warm-up
                zmq_us.append(elapsed)
        sock.close()
        conn = http.client.HTTPConnection("127.0.0.1", port)
        http_us = []
        for i in range(n + 100):
            start = time.perf_counter()
            conn.request("GET", "/status")
            resp = conn.getresponse()
            resp.read()
            elapsed = (time.perf_counter() - start) * 1e6
            assert resp.status == 200
            if i >= 100:
                http_us.append(elapsed)
        conn.close()
        wrk = run_wrk(port, wrk_secs)
    finally:
        engine.cleanup()
    for name, samples in (("zmq", zmq_us), ("http", http_us)):
        print(f"GET /status over {name:4}  n={len(samples)}  p50={statistics.median(samples):.0f} us  "
              f"p99={percentile(samples, 99):.0f} us  max={max(samples):.0f} us")
    print(wrk)


def run_wrk(port, secs):
    """wrk against /readyz; returns one summary line. Non-2xx answers or
    socket errors are part of the line, so a regression shows."""
    out = subprocess.run(
        ["wrk", "-t2", "-c16", f"-d{secs}s", "--latency", f"http://127.0.0.1:{port}/readyz"],
        capture_output=True, text=True, timeout=secs + 30, check=True).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)
    pct = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    errors = re.search(r"Socket errors:.*|Non-2xx.*", out)
    return (f"wrk GET /readyz  {secs}s  2 threads 16 conns  {float(rps):.0f} req/s  "
            f"p50={pct.get('50')}  p99={pct.get('99')}"
            + (f"  ({errors.group(0).strip()})" if errors else "  (0 errors)"))


if __name__ == "__main__":
    main()
