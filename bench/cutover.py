#!/usr/bin/env python3
"""B2 cutover under load, drover side: a producer at a fixed rate with sequence
numbers and send times, while N rolling replaces of a 2-core pipeline run back
to back; the pipeline exports to a zmq PUSH that this script reads.

Reports records lost, duplicated, the longest gap between two deliveries, and
p99 latency (send time to receipt here).

Usage: bench/cutover.py [REPLACES] [RATE]   (default 20 replaces, 200000 records/s)

The supervisord baseline (the same worker restarted with supervisorctl restart)
is not here yet: drover-worker has no standalone mode to run under supervisord."""

import http.client
import json
import os
import statistics
import sys
import threading
import time

import msgpack
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port  # noqa: E402

CONFIG = engine_yaml()
BATCH = 200


def spec(port, down, generation_tag):
    return {"pipeline": {"cores": {"count": 2}, "nodes": {
        "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["t"]},
        "t": {"type": "processor:transform", "config": {"set": {"g": generation_tag}}, "to": ["out"]},
        "out": {"type": "exporter:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{down}", "socket": "push"}}}}}


def main():
    replaces = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    http_port, port, down = free_port(), free_port(), free_port()
    engine = Engine(CONFIG.replace("HTTP", str(http_port))).start()
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.bind(f"tcp://127.0.0.1:{down}")
    received, arrivals, latencies = [], [], []
    stop = threading.Event()

    def consume():
        while not stop.is_set() or pull.poll(500):
            if pull.poll(100):
                now = time.time()
                batch = msgpack.unpackb(pull.recv())
                arrivals.append(now)
                for record in batch:
                    received.append(record["seq"])
                latencies.append(now - batch[0]["t"])

    sent = [0]

    def produce():
        push = ctx.socket(zmq.PUSH)
        push.connect(f"tcp://127.0.0.1:{port}")
        start = time.monotonic()
        while not stop.is_set():
            due = int((time.monotonic() - start) * rate)
            if sent[0] + BATCH > due:
                time.sleep(0.0005)  # pacing the producer to its rate
                continue
            t = time.time()
            push.send(msgpack.packb([{"seq": sent[0] + i, "t": t} for i in range(BATCH)]))
            sent[0] += BATCH
        push.close(linger=10000)

    try:
        Admin(engine, http_port).wait_ready()
        conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=60)

        def put(tag):
            conn.request("PUT", "/api/v1/groups/default/pipelines/b2", body=json.dumps(spec(port, down, tag)))
            resp = conn.getresponse()
            body = json.loads(resp.read())
            assert resp.status == 200, body
            return body

        put(0)
        engine.wait_log(r"instance connected instance=default/b2@1#1")
        threads = [threading.Thread(target=consume), threading.Thread(target=produce)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # steady state before the first replace
        walls = []
        for i in range(replaces):
            started = time.monotonic()
            put(i + 1)
            walls.append(time.monotonic() - started)
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join()
    finally:
        engine.cleanup()
        pull.close(linger=0)
        ctx.term()
    unique = set(received)
    lost = sent[0] - len(unique & set(range(sent[0])))
    duplicated = len(received) - len(unique)
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    p99 = sorted(latencies)[int(len(latencies) * 0.99)] * 1000
    print("| figure | drover | goal |")
    print("| --- | --- | --- |")
    print(f"| B2 records sent during {replaces} replaces at {rate:,}/s | {sent[0]:,} | |")
    print(f"| B2 lost | {lost} | 0 |")
    print(f"| B2 duplicated | {duplicated} | 0 |")
    print(f"| B2 longest gap in delivery | {max(gaps) * 1000:.1f} ms | < 20 ms |")
    print(f"| B2 p99 latency (send to receipt) | {p99:.1f} ms | |")
    print(f"| B2 replace wall time, median | {statistics.median(walls) * 1000:.1f} ms | |")


if __name__ == "__main__":
    main()
