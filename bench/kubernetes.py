#!/usr/bin/env python3
"""B30: processor:kubernetes (issue 49). CRI files of 100 pods (LINES lines
in all, kubernetes: true: the pod uid from the path) read from their
beginning by receiver:file -> processor:kubernetes -> exporter:null on one
core, the processor's cache holding the 1,000 pods of the node from the
tests' fake API server (tests/integration/kube_api.py; labels,
annotations, a ReplicaSet owner each), against the same pipeline without
the processor, in the same run: lines/s from the start until the last
record is out. Goal >= 0.85. Also the cache's memory per pod: the
worker's RSS with the 1,000 pods cached less its RSS with none, over
1,000 (report).

Usage: bench/kubernetes.py [LINES] [--smoke]   (default 2000000, best of 3)"""

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, proc_status, wait_until  # noqa: E402
from kube_api import KubeApi, owned, pod  # noqa: E402

PODS, FILES = 1000, 100


def uid(n):
    return f"00000000-0000-4000-8000-{n:012d}"


def fill(api):
    for n in range(PODS):
        api.put("replicasets", owned("ReplicaSet", f"app{n}-5c8d", "bench", ("Deployment", f"app{n}")))
        api.put("pods", pod(f"app{n}-5c8d-x{n}", "n1", "bench", ip=f"10.{n // 250}.{n % 250}.9", uid=uid(n),
                            owner=("ReplicaSet", f"app{n}-5c8d"),
                            labels={"app.kubernetes.io/name": f"app{n}", "pod-template-hash": "5c8d", "tier": "web"},
                            annotations={"team": "payments", "checksum/config": "9f86d081884c7d65"},
                            containers={"app": f"registry.example/app{n}:1.{n}"}))


def write_files(root, lines):
    os.makedirs(root)
    per = lines // FILES
    for f in range(FILES):
        n = f * (PODS // FILES)
        directory = os.path.join(root, f"bench_app{n}-5c8d-x{n}_{uid(n)}", "app")
        os.makedirs(directory)
        with open(os.path.join(directory, "0.log"), "w") as out:
            for k in range(per):
                out.write(f"2026-11-29T10:00:00.{k % 1000000000:09d}Z stdout F request {k:09d} served in 3ms"
                          f" path=/api/items/{k % 977} status=200\n")
    return per * FILES


def run(staged, root, records, api_url, processor):
    """Lines/s through the pipeline of the pods' directories staged moved
    under root once it is ready (they are moved back after), and the
    worker's RSS (kB) at the end."""
    port = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 50\n").replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)
        nodes = {"in": {"type": "receiver:file", "config": {"include": [f"{root}/*/*/*.log"], "format": "cri",
                                                             "kubernetes": True, "start_at": "beginning"},
                        "to": ["k8s" if processor else "out"]},
                 "out": {"type": "exporter:null"}}
        if processor:
            nodes["k8s"] = {"type": "processor:kubernetes", "to": ["out"], "config": {
                "api": {"server": api_url}, "node": "n1",
                "extract": {"labels": [{"key": "app.kubernetes.io/name", "attribute": "app"}],
                            "annotations": [{"key": "team"}]}}}

        def out():
            st = admin.http("GET", "/api/v1/groups/default/pipelines/b/status")[1]
            insts = st.get("instances") or [{}]
            return insts[0].get("nodes", {}).get("out", {}).get("records_out", 0)
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/b",
                                     body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
        assert status == 200, body  # ready: with the processor, once the pods were listed
        #  The pods' directories appear now (renamed in): what is timed is
        #  the reading, not the start.
        started = time.monotonic()
        for name in os.listdir(staged):
            os.rename(os.path.join(staged, name), os.path.join(root, name))
        wait_until(lambda: out() >= records, 300, f"{records} records out", interval=0.05)
        rate = records / (time.monotonic() - started)
        (pid,) = engine.instances().values()
        rss = int((proc_status(pid, "VmRSS") or "0 kB").split()[0])
        return rate, rss
    finally:
        engine.stop()
        engine.cleanup()
        for name in os.listdir(root):
            os.rename(os.path.join(root, name), os.path.join(staged, name))


def cache_rss(api_url):
    """The worker's RSS (kB) with processor:kubernetes listing what api_url has, no records."""
    port = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 50\n").replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)
        nodes = {"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{free_port()}"}, "to": ["k8s"]},
                 "k8s": {"type": "processor:kubernetes", "to": ["out"],
                         "config": {"api": {"server": api_url}, "node": "n1"}},
                 "out": {"type": "exporter:null"}}
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/c",
                                     body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
        assert status == 200, body

        def listed():
            st = admin.http("GET", "/api/v1/groups/default/pipelines/c/status")[1]
            k = ((st.get("instances") or [{}])[0].get("nodes") or {}).get("k8s", {}).get("kubernetes")
            return k and k["watch"] == "watching"
        wait_until(listed, 60, "the cache listed")
        (pid,) = engine.instances().values()
        return int((proc_status(pid, "VmRSS") or "0 kB").split()[0])
    finally:
        engine.stop()
        engine.cleanup()


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    lines = int(args[0]) if args else 2000000
    rounds = 1 if smoke else 3
    work = tempfile.mkdtemp(prefix="drover-k8s-bench-")
    full, empty = KubeApi(token=None), KubeApi(token=None)
    try:
        fill(full)
        staged, root = os.path.join(work, "staged"), os.path.join(work, "pods")
        os.makedirs(root)
        records = write_files(staged, lines)
        plain = enriched = 0.0
        for _ in range(rounds):
            plain = max(plain, run(staged, root, records, full.url(), False)[0])
            enriched = max(enriched, run(staged, root, records, full.url(), True)[0])
        ratio = enriched / plain
        print(f"| run ({records:,} CRI lines of {FILES} pods, {PODS:,} pods cached, one core) | lines/s |")
        print("| --- | ---: |")
        print(f"| receiver:file -> exporter:null | {plain:,.0f} |")
        print(f"| receiver:file -> processor:kubernetes -> exporter:null | {enriched:,.0f} |")
        print()
        print(f"B30 with processor:kubernetes / without = {ratio:.2f} (goal >= 0.85: {'met' if ratio >= 0.85 else 'missed'})")
        if not smoke:  # two more engines: not worth a smoke run's time
            with_pods, without = cache_rss(full.url()), cache_rss(empty.url())
            print(f"B30 cache memory: {(with_pods - without) * 1024 / PODS:,.0f} bytes per pod (worker RSS "
                  f"{with_pods:,} kB with {PODS:,} pods, {without:,} kB with none)")
    finally:
        full.close()
        empty.close()
        shutil.rmtree(work, True)


if __name__ == "__main__":
    main()
