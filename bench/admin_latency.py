#!/usr/bin/env python3
"""Latency of GET /status over the zmq admin socket and over HTTP, with two
pipelines running (a 2-core zmq pipeline and a 1-core generator).

Usage: bench/admin_latency.py [N]   (default 2000 requests per transport)

Each transport keeps one connection open (a DEALER socket; an HTTP/1.1
keep-alive connection) and sends requests back to back, one at a time; the
figures include this Python client's own overhead, so they are an upper bound
on the engine's."""

import http.client
import os
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
    finally:
        engine.cleanup()
    for name, samples in (("zmq", zmq_us), ("http", http_us)):
        print(f"GET /status over {name:4}  n={len(samples)}  p50={statistics.median(samples):.0f} us  "
              f"p99={percentile(samples, 99):.0f} us  max={max(samples):.0f} us")


if __name__ == "__main__":
    main()
