#!/usr/bin/env python3
"""B31: pipelines as Kubernetes resources (issue 50). droverd watches
DroverPipelines on the tests' fake API server (tests/integration/kube_api.py,
HTTPS and a token, as in a cluster); Debian's kubectl applies a changed
resource CHANGES times (a generator -> null pipeline on one core, its rate
changed each time), and the same change goes through PUT (wait=false) to
a pipeline of the API's, alternately, in the same run. Timed until the new
generation serves (the pipeline's generation is the new one, phase
running), status polled every 10 ms:

- apply -> serving: from kubectl's start (kubectl's own ~0.1-0.3 s included)
- stored -> serving: from the API server storing the change
- PUT -> serving
- the watch's delivery: from the API server storing it to droverd
  starting the rollout (the rollout's started_at)

Goal: stored -> serving <= 1.5 x PUT -> serving + the watch's delivery
(p50 and p99). Then droverd's CPU while idle with RESOURCES resources
(one-core generator pipelines at 1 record/s) against the same pipelines
made through PUT without a watch (report).

Usage: bench/kube_resources.py [CHANGES] [RESOURCES] [--smoke]   (default 50 500)"""

import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("DROVER_CHECK_STATUS_CACHE", "0")  # measured as users get it (the tests check it)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from capture import self_signed_cert  # noqa: E402
from harness import Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402
from kube_api import KubeApi, kubectl_env  # noqa: E402

IDLE_SECS = 20


def nodes(rate):
    return {"g": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["o"]}, "o": {"type": "exporter:null"}}


def manifest(name, rate):
    return json.dumps({"apiVersion": "drover.dev/v1alpha1", "kind": "DroverPipeline",
                       "metadata": {"name": name, "namespace": "bench", "labels": {"drover.dev/engine": "bench"}},
                       "spec": {"group": "default", "pipeline": {"cores": {"count": 1}, "nodes": nodes(rate)}}})


def wall(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Bench:
    def __init__(self, work):
        self.work = work
        self.ca, key = self_signed_cert(work)
        self.api = KubeApi(token="tok", certfile=self.ca, keyfile=key)
        self.token = os.path.join(work, "token")
        with open(self.token, "w") as f:
            f.write("tok\n")
        self.env = kubectl_env(self.api, self.ca, "tok", work)

    def engine(self, watch, max_pipelines=64):
        port = free_port()
        extra = f"  limits: {{max_pipelines: {max_pipelines}}}\n"
        if watch:
            extra += (f'  kubernetes: {{api: {{server: "{self.api.url()}", token_file: "{self.token}", ca_file: '
                      f'"{self.ca}"}}, watch: {{namespace: bench, label_selector: "drover.dev/engine=bench"}}}}\n')
        engine = Engine(engine_yaml(engine_extra=extra).replace("HTTP", str(port))).start(env={"POD_NAME": "bench"})
        admin = Admin(engine, port)
        admin.wait_ready(30)
        return engine, admin

    def kubectl_apply(self, text, wait=True):
        """kubectl apply of text: done, or (wait False) running (its Popen)."""
        path = os.path.join(self.work, "r.json")
        with open(path, "w") as f:
            f.write(text)
        proc = subprocess.Popen(["kubectl", "apply", "--validate=false", "-f", path], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait:
            assert proc.wait(60) == 0
        return proc

    def serving(self, admin, name, generation):
        def ready():
            status, body, _ = admin.http("GET", f"/api/v1/groups/default/pipelines/{name}/status")
            return status == 200 and body["generation"] == generation and body["phase"] == "running"
        wait_until(ready, 60, f"{name} generation {generation} serving", interval=0.01)
        return time.monotonic()

    def started_at(self, admin, name, generation):
        for r in admin.http("GET", f"/api/v1/groups/default/pipelines/{name}/rollouts")[1]:
            if r.get("target_generation") == generation:
                return wall(r["started_at"])
        raise AssertionError(f"no rollout of {name} to generation {generation}")

    def changes(self, count):
        engine, admin = self.engine(True)
        try:
            self.kubectl_apply(manifest("viakube", 1))
            self.serving(admin, "viakube", 1)
            status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/viaput",
                                         body={"pipeline": {"cores": {"count": 1}, "nodes": nodes(1)}}, timeout=30)
            assert status == 200, body
            apply, stored, put, delivery = [], [], [], []
            for i in range(count):
                generation = i + 2
                t0, w0 = time.monotonic(), time.time()
                kubectl = self.kubectl_apply(manifest("viakube", generation), wait=False)
                done = self.serving(admin, "viakube", generation)  # polled while kubectl ends
                assert kubectl.wait(60) == 0
                at = self.api.stored_at[("droverpipelines", "bench", "viakube")]
                apply.append(done - t0)
                stored.append(done - t0 - (at - w0))
                delivery.append(self.started_at(admin, "viakube", generation) - at)
                t0 = time.monotonic()
                status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/viaput?wait=false",
                                             body={"pipeline": {"cores": {"count": 1}, "nodes": nodes(generation)}})
                assert status == 202, body
                put.append(self.serving(admin, "viaput", generation) - t0)
            return apply, stored, put, delivery
        finally:
            engine.stop()
            engine.cleanup()

    def idle_cpu(self, resources, watch):
        """droverd's CPU (s per s) over IDLE_SECS with resources one-core
        pipelines, made from resources (watch) or through PUT."""
        engine, admin = self.engine(watch, max_pipelines=resources + 8)
        try:
            for i in range(resources):
                if watch:
                    self.api.put("droverpipelines", json.loads(manifest(f"r{i}", 1)))
                else:
                    status, body, _ = admin.http("PUT", f"/api/v1/groups/default/pipelines/r{i}?wait=false",
                                                 body={"pipeline": {"cores": {"count": 1}, "nodes": nodes(1)}})
                    assert status == 202, body

            def all_running():
                body = admin.http("GET", "/status", timeout=30)[1]
                running = [p for p in body["pipelines"].values() if p.get("phase") == "running"]
                return len(running) >= resources
            wait_until(all_running, 300, f"{resources} pipelines running", interval=0.5)
            if watch:  # every status entry written: the writes are not idle work
                wait_until(lambda: sum(1 for (p, _, _), o in list(self.api.objects.items()) if p == "droverpipelines"
                                       and (o.get("status") or {}).get("engines", {}).get("bench", {}).get("phase")
                                       == "running") >= resources, 120, "every status written", interval=0.5)
            before = self.cpu(engine.pid)
            time.sleep(IDLE_SECS)  # the measurement window itself, not a synchronisation
            return (self.cpu(engine.pid) - before) / IDLE_SECS
        finally:
            engine.stop()
            engine.cleanup()
            if watch:
                for i in range(resources):
                    self.api.delete("droverpipelines", "bench", f"r{i}")

    @staticmethod
    def cpu(pid):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    changes = int(args[0]) if args else (5 if smoke else 50)
    resources = int(args[1]) if len(args) > 1 else (0 if smoke else 500)
    work = tempfile.mkdtemp(prefix="drover-kres-bench-")
    bench = Bench(work)
    try:
        apply, stored, put, delivery = bench.changes(changes)
        print(f"| {changes} changes, one-core pipeline | p50 ms | p99 ms |")
        print("| --- | ---: | ---: |")
        for label, values in (("kubectl apply -> new generation serving", apply),
                              ("stored by the API server -> serving", stored), ("PUT -> serving", put),
                              ("the watch's delivery (stored -> rollout started)", delivery)):
            print(f"| {label} | {pct(values, 0.5) * 1000:,.1f} | {pct(values, 0.99) * 1000:,.1f} |")
        print()
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            allowed = 1.5 * pct(put, q) + pct(delivery, q)
            got = pct(stored, q)
            print(f"B31 {name}: stored -> serving {got * 1000:,.1f} ms against 1.5 x PUT + delivery "
                  f"{allowed * 1000:,.1f} ms = {got / allowed:.2f} (goal <= 1: {'met' if got <= allowed else 'missed'})")
        if resources:
            watched, plain = bench.idle_cpu(resources, True), bench.idle_cpu(resources, False)
            print(f"B31 droverd CPU idle with {resources} one-core pipelines: {watched * 100:.2f} % of a core "
                  f"watching {resources} DroverPipelines, {plain * 100:.2f} % with the same made through PUT "
                  f"(difference {(watched - plain) * 100:+.2f} %)")
    finally:
        bench.api.close()
        shutil.rmtree(work, True)


if __name__ == "__main__":
    main()
