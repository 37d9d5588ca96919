#!/usr/bin/env python3
"""B7 chaos: acknowledged load while instances and the broker are SIGKILLed at
random and a rollout runs every few seconds; at the end every acknowledged
record must have been exported (0 lost).

Usage: bench/chaos.py [SECONDS]   (default 60)

Load: drover-produce (libdrover-client) sends 10-record messages to an ack-mode
receiver and waits for each ack, retrying; the script counts what it was told
is exported and checks the files. Faults: every 0.5-1.5 s one of
{SIGKILL an instance, SIGKILL the broker, PUT a replace}, chosen at random with
a fixed seed."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import http.client

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, BIN, Engine, children_of, cmdline, engine_yaml, free_port, read_ndjson, wait_until  # noqa: E402

CONFIG = engine_yaml(engine_extra="  heartbeat_interval_ms: 200\n")


def spec(port, out, tag):
    return {"pipeline": {"cores": {"count": 2}, "nodes": {
        "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}", "ack": True},
               "to": ["t"]},
        "t": {"type": "processor:transform", "config": {"set": {"tag": tag}}, "to": ["out"]},
        "out": {"type": "exporter:file", "config": {"path": out + "/{core}-{generation}.ndjson"}}},
        "policies": {"restart": {"max_restarts": 1000, "window_secs": 1}}}}


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    rng = random.Random(7)
    http_port, port = free_port(), free_port()
    engine = Engine(CONFIG.replace("HTTP", str(http_port))).start()
    faults = {"instance": 0, "broker": 0, "rollout": 0}
    try:
        Admin(engine, http_port).wait_ready()
        conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=120)

        def put(tag):
            conn.request("PUT", "/api/v1/groups/default/pipelines/chaos", body=json.dumps(spec(port, engine.out_dir, tag)), headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())

        assert put(0)[0] == 200
        count = 1000000  # more than it can send: it is stopped at the end
        producer = subprocess.Popen([os.path.join(BIN, "drover-produce"), f"tcp://127.0.0.1:{port}", str(count),
                                     "10", "60000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + seconds
        tag = 0
        while time.monotonic() < end:
            time.sleep(rng.uniform(0.5, 1.5))  # the pace of the faults
            fault = rng.choice(["instance", "instance", "broker", "rollout"])
            if fault == "instance":
                live = [pid for name, pid in engine.instances().items() if name.startswith("default/chaos@")]
                if live:
                    os.kill(rng.choice(live), signal.SIGKILL)
            elif fault == "broker":
                broker = next((c for c in children_of(engine.pid) if cmdline(c) == "drover-broker"), None)
                if broker:
                    os.kill(broker, signal.SIGKILL)
            else:
                tag += 1
                put(tag)  # may fail (an instance killed mid-step): that is part of the chaos
            faults[fault] += 1
        producer.send_signal(signal.SIGTERM)
        out, err = producer.communicate(timeout=90)
        acked_msgs = int(re.search(r"acked=(\d+)", out).group(1))
        seqs = []
        for name in os.listdir(engine.out_dir):
            seqs.extend(r["seq"] for r in read_ndjson(os.path.join(engine.out_dir, name)))
    finally:
        engine.cleanup()
    unique = set(seqs)
    # Every acknowledged message's records must be in the files.
    lost = len(set(range(acked_msgs * 10)) - unique)
    print("| figure | drover | goal |")
    print("| --- | --- | --- |")
    print(f"| B7 chaos for {seconds:.0f} s: instance kills / broker kills / rollouts | "
          f"{faults['instance']} / {faults['broker']} / {faults['rollout']} | |")
    print(f"| B7 records acknowledged | {acked_msgs * 10:,} | |")
    print(f"| B7 acknowledged records lost | {lost} | 0 |")
    print(f"| B7 duplicates (at least once) | {len(seqs) - len(unique)} | |")
    if lost:
        sys.exit(1)


if __name__ == "__main__":
    main()
