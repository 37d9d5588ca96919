#!/usr/bin/env python3
"""B2 cutover under load: a producer at a fixed rate with sequence numbers and
send times, while N restarts run back to back; the pipeline exports to a zmq
PUSH that this script reads. Reports records lost, duplicated, the longest gap
between two deliveries and p99 latency (send time to receipt here).

drover: N rolling replaces (PUT, wait=true) of a 2-core pipeline behind the
   broker's front door.
supervisord (the baseline, as people do it today): the same worker binary and
   nodes run standalone (`drover-standalone spec.json`, binding its
   own PULL socket) under supervisord, restarted N times with
   `supervisorctl restart`. One process: two could not bind one endpoint.

Usage: bench/cutover.py [REPLACES] [RATE]   (default 20 restarts, 200000 records/s)"""

import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time

import msgpack
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import BIN, Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402
from supervisord import Supervisord  # noqa: E402

BATCH = 200


def nodes(port, down, tag):
    return {"in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"set": {"g": tag}}, "to": ["out"]},
            "out": {"type": "exporter:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{down}", "socket": "push"}}}


class Load:
    """The consumer's PULL is bound first, before the pipeline's exporter
    connects (a late bind would cost the exporter a reconnect interval, and
    the first batches their latency); run() then drives the producer and the
    consumer around the restarts."""

    def __init__(self, port, down, rate):
        self.port, self.rate = port, rate
        self.ctx = zmq.Context()
        self.pull = self.ctx.socket(zmq.PULL)
        self.pull.bind(f"tcp://127.0.0.1:{down}")

    def run(self, restarts, restart):
        """Calls restart(i) `restarts` times under load; returns the figures."""
        received, arrivals, latencies = [], [], []
        stop = threading.Event()
        sent = [0]
        pull = self.pull

        def consume():
            while not stop.is_set() or pull.poll(500):
                if pull.poll(100):
                    now = time.time()
                    batch = msgpack.unpackb(pull.recv())
                    arrivals.append(now)
                    for record in batch:
                        received.append(record["seq"])
                    latencies.append(now - batch[0]["t"])

        def produce():
            push = self.ctx.socket(zmq.PUSH)
            push.connect(f"tcp://127.0.0.1:{self.port}")
            start = time.monotonic()
            while not stop.is_set():
                due = int((time.monotonic() - start) * self.rate)
                if sent[0] + BATCH > due:
                    time.sleep(0.0005)  # pacing the producer to its rate
                    continue
                t = time.time()
                push.send(msgpack.packb([{"seq": sent[0] + i, "t": t} for i in range(BATCH)]))
                sent[0] += BATCH
            push.close(linger=10000)

        threads = [threading.Thread(target=consume), threading.Thread(target=produce)]
        walls = []
        try:
            for t in threads:
                t.start()
            time.sleep(1.0)  # steady state before the first restart
            for i in range(restarts):
                started = time.monotonic()
                restart(i)
                walls.append(time.monotonic() - started)
            time.sleep(1.0)
        finally:
            stop.set()
            for t in threads:
                t.join()
        unique = set(received)
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
        return {"sent": sent[0], "lost": sent[0] - len(unique & set(range(sent[0]))),
                "duplicated": len(received) - len(unique), "gap": max(gaps) * 1000,
                "p99": sorted(latencies)[int(len(latencies) * 0.99)] * 1000,
                "wall": statistics.median(walls) * 1000}

    def close(self):
        self.pull.close(linger=0)
        self.ctx.term()


def drover(restarts, rate):
    http_port, port, down = free_port(), free_port(), free_port()
    load = Load(port, down, rate)
    engine = Engine(engine_yaml().replace("HTTP", str(http_port))).start()
    try:
        Admin(engine, http_port).wait_ready()
        conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=60)

        def put(tag):
            spec = {"pipeline": {"cores": {"count": 2}, "nodes": nodes(port, down, tag)}}
            conn.request("PUT", "/api/v1/groups/default/pipelines/b2", body=json.dumps(spec), headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            body = json.loads(resp.read())
            assert resp.status == 200, body

        put(0)
        engine.wait_log(r"instance connected instance=default/b2@1#1")
        return load.run(restarts, lambda i: put(i + 1))
    finally:
        engine.cleanup()
        load.close()


def supervisord(restarts, rate):
    port, down = free_port(), free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"pipeline": {"nodes": nodes(port, down, 0)}}, f)
    load = Load(port, down, rate)
    sup = Supervisord({"b2": (f"{BIN}/drover-standalone {f.name}", True)}).start()
    try:
        wait_until(lambda: "ready standalone" in sup.log("b2"), 10, "standalone worker ready")

        def restart(i):
            sup.ctl("restart", "b2")

        return load.run(restarts, restart)
    finally:
        sup.stop()
        load.close()
        os.unlink(f.name)


def main():
    restarts = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    d = drover(restarts, rate)
    s = supervisord(restarts, rate)
    print(f"{restarts} restarts at {rate:,} records/s: drover replaces a 2-core pipeline (PUT), "
          f"supervisord restarts the standalone worker (supervisorctl restart).\n")
    print("| figure | drover | supervisord | goal |")
    print("| --- | --- | --- | --- |")
    print(f"| B2 records sent | {d['sent']:,} | {s['sent']:,} | |")
    print(f"| B2 lost | {d['lost']:,} | {s['lost']:,} | 0 |")
    print(f"| B2 duplicated | {d['duplicated']:,} | {s['duplicated']:,} | 0 |")
    print(f"| B2 longest gap in delivery | {d['gap']:.1f} ms | {s['gap']:.1f} ms | < 20 ms |")
    print(f"| B2 p99 latency (send to receipt) | {d['p99']:.1f} ms | {s['p99']:.1f} ms | |")
    print(f"| B2 restart wall time, median | {d['wall']:.1f} ms | {s['wall']:.1f} ms | |")


if __name__ == "__main__":
    main()
