#!/usr/bin/env python3
"""B15: what a canary adds to a rollout. The same 2-core replace, PUT with
wait=true, alternately plain and with policies.rollout.canary {cores: 1,
hold_secs: H, max_error_ratio: 1}; the canary's wall time minus its hold
against the plain replace's wall time, medians, in the same run. Goal (issue
15): the canary adds its hold and nothing more, a ratio of about 1.

Usage: bench/canary.py [N] [HOLD_SECS]   (default 10 of each, 1 s hold)"""

import http.client
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port  # noqa: E402


def spec(rate, hold=None):
    rollout = {"canary": {"cores": 1, "hold_secs": hold, "max_error_ratio": 1}} if hold is not None else {}
    return {"pipeline": {"cores": {"count": 2}, "nodes": {
        "g": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["out"]},
        "out": {"type": "exporter:null"}}, "policies": {"rollout": rollout}}}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    hold = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    port = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n").replace("HTTP", str(port))).start()
    try:
        Admin(engine, port).wait_ready()
        conn = http.client.HTTPConnection("127.0.0.1", port)

        def put(body):
            start = time.perf_counter()
            conn.request("PUT", "/api/v1/groups/default/pipelines/p", body=json.dumps(body),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            reply = json.loads(resp.read())
            assert resp.status == 200 and reply["action"] in ("create", "replace"), reply
            return (time.perf_counter() - start) * 1000, reply

        put(spec(1))
        plain, canary = [], []
        for i in range(n):  # interleaved: both see the same machine
            plain.append(put(spec(10 + 2 * i))[0])
            wall, reply = put(spec(11 + 2 * i, hold))
            assert reply["canary"]["verdict"] == "pass", reply["canary"]
            canary.append(wall - hold * 1000)
        conn.close()
    finally:
        engine.cleanup()
    p, c = statistics.median(plain), statistics.median(canary)
    print("| measure | value | goal |")
    print("| --- | ---: | --- |")
    print(f"| B15 plain 2-core replace, median of {n} | {p:.1f} ms | |")
    print(f"| B15 canary replace minus its {hold} s hold, median of {n} | {c:.1f} ms | |")
    print(f"| B15 (canary − hold) / plain | {c / p:.2f} | ≈ 1 (the hold and nothing more) |")


if __name__ == "__main__":
    main()
