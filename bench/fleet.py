#!/usr/bin/env python3
"""B21: from an OpAMP server's remote config to APPLIED. droverd reports to
the test OpAMP server (tests/integration/opamp_server.py) every second; the
server puts a remote config in an answer and notes the time; the figure is
the time until a report says APPLIED for that config's hash, taken from the
server's side. Two cases: a replace of one 2-core pipeline, and a replace
of 20 one-core pipelines at once (each created by an earlier remote
config). Goals (issue 27): < 2 s and < 10 s on 2 cores.

Usage: bench/fleet.py [ROUNDS] [--smoke]   (default 5 rounds of each; the median)"""

import copy
import os
import statistics
import sys
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402
from opamp_server import OpampServer  # noqa: E402


def pipelines(count, cores, tag):
    spec = {"cores": {"count": cores}, "nodes": {
        "g": {"type": "receiver:generator", "config": {"rate": 100, "record": {"tag": tag}}, "to": ["t"]},
        "t": {"type": "processor:transform", "config": {"set": {"tag": tag}}, "to": ["out"]},
        "out": {"type": "exporter:null"}}}
    return {"groups": {"default": {"pipelines": {f"p{i}": copy.deepcopy(spec) for i in range(count)}}}}


def apply(server, doc, config_hash):
    """Seconds from the answer that carries doc to the report that says it is APPLIED."""
    sent = []

    def fill(answer):
        f = answer.remote_config.config.config_map["drover.yaml"]
        f.body = yaml.safe_dump(doc).encode()
        answer.remote_config.config_hash = config_hash
        sent.append(time.monotonic())

    with server.lock:
        server.script.append(fill)

    def applied():
        for m in server.received():
            s = m.remote_config_status
            if m.HasField("remote_config_status") and s.last_remote_config_hash == config_hash:
                if s.status == 3:
                    raise AssertionError(f"remote config failed: {s.error_message}")
                if s.status == 1:
                    return time.monotonic()
        return None
    done = wait_until(applied, 120, "APPLIED")
    return done - sent[0]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    smoke = "--smoke" in sys.argv
    rounds = int(args[0]) if args else (1 if smoke else 5)
    server = OpampServer()
    port = free_port()
    extra = f"  heartbeat_interval_ms: 100\n  opamp:\n    endpoint: {server.url}\n    poll_interval_secs: 1\n"
    engine = Engine(engine_yaml(engine_extra=extra).replace("HTTP", str(port))).start()
    try:
        Admin(engine, port).wait_ready()
        counter = [0]

        def next_hash():
            counter[0] += 1
            return counter[0].to_bytes(4, "big")
        one, many = [], []
        apply(server, pipelines(1, 2, "create"), next_hash())
        for r in range(rounds):
            one.append(apply(server, pipelines(1, 2, f"v{r}"), next_hash()))
        apply(server, pipelines(20 if not smoke else 3, 1, "create"), next_hash())
        for r in range(rounds):
            many.append(apply(server, pipelines(20 if not smoke else 3, 1, f"v{r}"), next_hash()))
    finally:
        engine.cleanup()
        server.close()
    print("| figure | drover | goal |")
    print("| --- | --- | --- |")
    print(f"| B21 remote config to APPLIED, replace of one 2-core pipeline, median of {rounds} | "
          f"{statistics.median(one) * 1000:.0f} ms | < 2 s |")
    print(f"| B21 remote config to APPLIED, replace of {20 if not smoke else 3} one-core pipelines at once, "
          f"median of {rounds} | {statistics.median(many) * 1000:.0f} ms | < 10 s |")


if __name__ == "__main__":
    main()
