#!/usr/bin/env python3
"""Rollout overhead: the wall time of a 2-core replace minus its health gates,
and the response time of a noop PUT.

Usage: bench/rollout.py [N]   (default 20 replaces, 200 noops; run after `make build`)

A replace of a 2-core generator pipeline is PUT with wait=true over one HTTP
keep-alive connection. Its health gates are the new instances' fork->READY
times (startup_us in droverd's 'instance ready' lines); what is left is the
engine's own work: planning, spawning, the broker switch, draining and reaping
the old generation, and answering."""

import http.client
import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port  # noqa: E402

CONFIG = engine_yaml()


def spec(rate):
    return {"pipeline": {"cores": {"count": 2}, "nodes": {
        "g": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["out"]},
        "out": {"type": "exporter:null"}}}}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    port = free_port()
    engine = Engine(CONFIG.replace("HTTP", str(port))).start()
    ready = re.compile(r"instance ready instance=default/p@(\d+)#(\d+) pid=\d+ startup_us=(\d+)")
    try:
        Admin(engine, port).wait_ready()
        conn = http.client.HTTPConnection("127.0.0.1", port)

        def put(body):
            start = time.perf_counter()
            conn.request("PUT", "/api/v1/groups/default/pipelines/p", body=json.dumps(body), headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            reply = json.loads(resp.read())
            assert resp.status == 200, reply
            return (time.perf_counter() - start) * 1000, reply

        put(spec(1))
        walls, gates, overheads = [], [], []
        for i in range(n):
            wall, reply = put(spec(2 + i))
            generation = reply["target_generation"]
            startups = [int(us) for g, c, us in ready.findall(engine.log_text()) if int(g) == generation]
            assert len(startups) == 2, startups
            gate = sum(startups) / 1000
            walls.append(wall)
            gates.append(gate)
            overheads.append(wall - gate)
        noops = []
        for i in range(200):
            wall, reply = put(spec(1 + n))
            assert reply["action"] == "noop"
            noops.append(wall)
        conn.close()
    finally:
        engine.cleanup()
    print(f"replace_2core_wall_ms      n={n} median={statistics.median(walls):.2f} max={max(walls):.2f}")
    print(f"replace_2core_gates_ms     n={n} median={statistics.median(gates):.2f}")
    print(f"replace_2core_overhead_ms  n={n} median={statistics.median(overheads):.2f} max={max(overheads):.2f}")
    print(f"noop_put_ms                n={len(noops)} median={statistics.median(noops):.3f} "
          f"p99={sorted(noops)[int(len(noops) * 0.99)]:.3f}")


if __name__ == "__main__":
    main()
