#!/usr/bin/env python3
"""B8 scale: many pipelines, many replaces. PIPELINES one-core generator
pipelines are created, then each is replaced ROUNDS times (every round PUTs
a new spec to every pipeline with wait=false, then waits until all have
rolled). Reported: droverd's RSS before and after, and GET /status latency
over HTTP (p50/p99) while the rounds run and once they are done.

Then droverd's CPU time per instance heartbeat while idle, with PIPELINES
running one-core pipelines against the same with 10 (IDLE_SECS each, every
instance heartbeating every 100 ms): work per heartbeat that grows with the
number of instances (a walk over all of them on every wake-up) shows as a
ratio above 1.

Usage: bench/scale.py [PIPELINES] [ROUNDS] [IDLE_SECS]   (default 200 40 60; run after `make build`)
Goals (issues 11, 24 and 41): RSS after < 48 MB, GET /status p99 < 20 ms, CPU
per heartbeat with PIPELINES pipelines < 2x that with 10."""

import http.client
import os
import statistics
import sys
import threading
import time

os.environ.setdefault("DROVER_CHECK_STATUS_CACHE", "0")  # measured as users get it (the tests check it)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, proc_status, wait_until  # noqa: E402


def rss_mb(pid):
    return int((proc_status(pid, "VmRSS") or "0 kB").split()[0]) / 1024


def spec(rate):
    return {"pipeline": {"nodes": {"g": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["out"]},
                                   "out": {"type": "exporter:null"}}}}


def status_latencies(port, stop, out):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not stop.is_set():
        start = time.perf_counter()
        conn.request("GET", "/status")
        resp = conn.getresponse()
        resp.read()
        out.append((time.perf_counter() - start) * 1000)
        stop.wait(0.05)
    conn.close()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


HEARTBEAT_MS = 100


def idle_cpu_per_heartbeat(pipelines, secs):
    """droverd's CPU µs per instance heartbeat over secs idle seconds."""
    port = free_port()
    engine = Engine(engine_yaml(engine_extra=f"  heartbeat_interval_ms: {HEARTBEAT_MS}\n"
                                             f"  limits: {{ max_pipelines: {max(pipelines, 1)} }}\n")
                    .replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready()
        for i in range(pipelines):
            status, body = admin.zmq("PUT", f"/api/v1/groups/default/pipelines/p{i}", query={"wait": "false"},
                                     body=spec(1), timeout=30)
            assert status in (200, 202), body
        wait_until(lambda: all(p["phase"] == "running" for p in
                               admin.zmq("GET", "/status", timeout=30)[1]["pipelines"].values()),
                   120, "every pipeline running", interval=0.2)
        hz = os.sysconf("SC_CLK_TCK")
        before, started = cpu_ticks(engine.pid), time.monotonic()
        time.sleep(secs)  # the measurement window itself, not a synchronisation
        used_s = (cpu_ticks(engine.pid) - before) / hz
        heartbeats = pipelines * (time.monotonic() - started) * 1000 / HEARTBEAT_MS
        return used_s * 1e6 / heartbeats, used_s
    finally:
        engine.cleanup()


def main():
    pipelines = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    idle_secs = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    port = free_port()
    engine = Engine(engine_yaml(engine_extra=f"  limits: {{ max_pipelines: {max(pipelines, 1)} }}\n")
                    .replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready()
        rss_start = rss_mb(engine.pid)
        names = [f"p{i}" for i in range(pipelines)]

        def roll(rate, generation):
            for name in names:
                status, body = admin.zmq("PUT", f"/api/v1/groups/default/pipelines/{name}",
                                         query={"wait": "false"}, body=spec(rate), timeout=30)
                assert status in (200, 202), body

            def done():
                pipes = admin.zmq("GET", "/status", timeout=30)[1]["pipelines"]
                return all(p["generation"] == generation and p["phase"] == "running" for p in pipes.values())
            wait_until(done, 120 + pipelines, f"generation {generation} everywhere", interval=0.2)

        started = time.monotonic()
        roll(1, 1)
        created_s = time.monotonic() - started
        rss_created = rss_mb(engine.pid)
        during, stop = [], threading.Event()
        sampler = threading.Thread(target=status_latencies, args=(port, stop, during))
        sampler.start()
        started = time.monotonic()
        for r in range(rounds):
            roll(2 + r, 2 + r)
        rolled_s = time.monotonic() - started
        stop.set()
        sampler.join()
        after = []
        stop = threading.Event()
        t = threading.Thread(target=status_latencies, args=(port, stop, after))
        t.start()
        wait_until(lambda: len(after) >= 100, 60, "100 idle /status samples")
        stop.set()
        t.join()
        rss_after = rss_mb(engine.pid)
        replaces = pipelines * rounds
        print("| figure | value | goal |")
        print("| --- | --- | --- |")
        print(f"| B8 pipelines x replaces | {pipelines} x {rounds} = {replaces} replaces in {rolled_s:.1f} s "
              f"({replaces / rolled_s:.0f}/s; creating them: {created_s:.1f} s) | — |")
        print(f"| B8 droverd RSS at start / with {pipelines} pipelines / after | {rss_start:.1f} / {rss_created:.1f} / "
              f"{rss_after:.1f} MB | after < 48 MB: {'met' if rss_after < 48 else 'missed'} |")
        if during:
            print(f"| B8 GET /status during the rounds p50 / p99 | {statistics.median(during):.2f} / "
                  f"{percentile(during, 99):.2f} ms ({len(during)} samples) | — |")
        p99 = percentile(after, 99)
        print(f"| B8 GET /status after p50 / p99 | {statistics.median(after):.2f} / {p99:.2f} ms "
              f"({len(after)} samples) | p99 < 20 ms: {'met' if p99 < 20 else 'missed'} |")
    finally:
        engine.cleanup()
    few = 10
    per_few, used_few = idle_cpu_per_heartbeat(few, idle_secs)
    per_many, used_many = idle_cpu_per_heartbeat(pipelines, idle_secs)
    ratio = per_many / per_few if per_few > 0 else float("inf")
    print(f"| B8 droverd CPU per instance heartbeat, idle {idle_secs:.0f} s: {pipelines} / {few} pipelines | "
          f"{per_many:.1f} / {per_few:.1f} µs ({used_many:.2f} / {used_few:.2f} s CPU); ratio {ratio:.2f} | "
          f"< 2 (linear): {'met' if ratio < 2 else 'missed'} |")


if __name__ == "__main__":
    main()
