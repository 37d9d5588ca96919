"""DroverPipeline resources (docs/kubernetes.md, "Pipelines as Kubernetes
resources"; issue 50) through the real binaries: droverd watches them on
the fake API server of kube_api.py, over HTTPS with a CA and a token
file, and Debian's kubectl applies, changes, describes and deletes them.
A resource becomes a pipeline; a change is a rollout while a client posts
throughout and loses nothing; a resource without the selector's label is
ignored; an invalid spec is refused in the status and changes nothing;
the admin API answers 409 naming the resource; a deletion shuts the
pipeline down; droverd SIGKILLed while resources change converges on what
the API holds when it comes back; a 410 relists without a rollout; a
resource takes over a pipeline of the config file, which a reload then
skips; two droverds keep their own status entries."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import unittest

from capture import self_signed_cert
from harness import Admin, EngineTest, engine_yaml, free_port, read_ndjson, unobserved, wait_until
from kube_api import KubeApi, kubectl_env

LABEL = "drover.dev/engine=node"


class KubeResources(EngineTest):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="drv-kres-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.ca, key = self_signed_cert(self.dir)
        self.api = KubeApi(token="tok", certfile=self.ca, keyfile=key)
        self.addCleanup(self.api.close)
        self.token_file = os.path.join(self.dir, "token")
        with open(self.token_file, "w") as f:
            f.write("tok\n")
        self.env = kubectl_env(self.api, self.ca, "tok", self.dir)
        self.http_port = free_port()

    def config(self, http_port=None):
        extra = f"""  kubernetes:
    api: {{server: "{self.api.url()}", token_file: "{self.token_file}", ca_file: "{self.ca}"}}
    watch: {{namespace: drover, label_selector: "{LABEL}"}}
"""
        return engine_yaml("{}", extra).replace("HTTP", str(http_port or self.http_port))

    def start(self, name="pod-a", http_port=None):
        engine = self.start_engine(self.config(http_port), env={"POD_NAME": name})
        admin = Admin(engine, http_port or self.http_port)
        admin.wait_ready(20)
        return engine, admin

    def kubectl(self, *args, check=True):
        done = subprocess.run(["kubectl", *args], env=self.env, capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(done.returncode, 0, done.stderr)
        return done

    def apply(self, name, nodes, labels=f"{{drover.dev/engine: node}}", cores=1, group="default"):
        manifest = os.path.join(self.dir, f"{name}.yaml")
        with open(manifest, "w") as f:
            f.write(f"""apiVersion: drover.dev/v1alpha1
kind: DroverPipeline
metadata: {{name: {name}, namespace: drover, labels: {labels}}}
spec:
  group: {group}
  pipeline: {json.dumps({"cores": {"count": cores}, "nodes": nodes})}
""")
        return self.kubectl("apply", "--validate=false", "-f", manifest).stdout

    def resource(self, name):
        return json.loads(self.kubectl("get", "droverpipeline", name, "-n", "drover", "-o", "json").stdout)

    def entry(self, name, engine="pod-a"):
        obj = self.api.objects.get(("droverpipelines", "drover", name)) or {}
        return ((obj.get("status") or {}).get("engines") or {}).get(engine) or {}

    def pipeline(self, admin, name, group="default"):
        status, body, _ = admin.http("GET", f"/api/v1/groups/{group}/pipelines/{name}")
        return body if status == 200 else None

    def serving(self, admin, name, generation):
        """Waits until name's resource generation is applied and serves: its pipeline."""
        def ready():
            e = self.entry(name)
            return (e.get("observedGeneration") == generation and e.get("phase") == "running"
                    and e.get("readyInstances", 0) >= 1 and self.pipeline(admin, name))
        return wait_until(ready, 30, f"{name} generation {generation} serving, said in its status")

    def http_nodes(self, port, out, version):
        return {"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}", "ack": True}, "to": ["v"]},
                "v": {"type": "processor:transform", "config": {"set": {"v": version}}, "to": ["out"]},
                "out": {"type": "exporter:file", "config": {"path": f"{out}/shop-{{core}}-{{generation}}.ndjson"}}}

    def test_apply_change_refuse_and_delete_while_a_client_posts(self):
        engine, admin = self.start()
        port, out = free_port(), os.path.join(self.dir, "out")
        os.makedirs(out)
        self.assertIn("created", self.apply("shop", self.http_nodes(port, out, 1)))
        body = self.serving(admin, "shop", 1)
        self.assertEqual((body["status"]["source"], body["status"]["owner"]), ("kubernetes", "drover/shop"))
        #  A client posts throughout the change: every acknowledged record lands once.
        acked, stop = [], threading.Event()

        def post():
            import http.client
            n = 0
            while not stop.is_set():
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    c.request("POST", "/", json.dumps({"n": n}), {"Content-Type": "application/json"})
                    if c.getresponse().status == 200:
                        acked.append(n)
                    c.close()
                except OSError:
                    pass  # refused between generations would be a failure below (nothing acknowledged is lost)
                n += 1
        poster = threading.Thread(target=post, daemon=True)
        poster.start()
        wait_until(lambda: len(acked) >= 50, 20, "records posted to generation 1")
        self.assertIn("configured", self.apply("shop", self.http_nodes(port, out, 2)))
        self.serving(admin, "shop", 2)
        wait_until(lambda: self.pipeline(admin, "shop")["status"]["generation"] == 2, 30, "generation 2")
        count = len(acked)
        wait_until(lambda: len(acked) >= count + 50, 20, "records posted to generation 2")
        stop.set()
        poster.join(20)

        def filed():
            rows = [r for p in os.listdir(out) for r in unobserved(read_ndjson(os.path.join(out, p)))]
            return rows if {r["n"] for r in rows} >= set(acked) else None
        rows = wait_until(filed, 20, "every acknowledged record filed")
        self.assertEqual(len([r for r in rows if r["n"] in set(acked)]), len(acked), "each once")
        self.assertEqual({r["v"] for r in rows}, {1, 2}, "both generations served")

        #  Not selected: a resource without the label.
        self.apply("other", {"g": {"type": "receiver:generator", "config": {"rate": 1}, "to": ["o"]},
                             "o": {"type": "exporter:null"}}, labels="{team: x}")
        #  Invalid: refused in the status, nothing changes.
        self.apply("shop", {"in": {"type": "receiver:nope"}})
        entry = wait_until(lambda: (lambda e: e if e.get("observedGeneration") == 3 else None)(self.entry("shop")), 20,
                           "generation 3 refused in the status")
        self.assertEqual(entry["phase"], "invalid")
        self.assertIn("invalid PipelineSpec", entry["message"])
        self.assertIn("spec.pipeline.nodes.in.type", entry["message"])
        self.assertEqual(self.pipeline(admin, "shop")["status"]["generation"], 2, "nothing changed")
        self.assertIsNone(self.pipeline(admin, "other"), "a resource the selector does not select is ignored")
        #  The admin API: the resource owns the pipeline.
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/shop",
                                     body={"pipeline": {"cores": {"count": 1}, "nodes": self.http_nodes(port, out, 9)}})
        self.assertEqual(status, 409, body)
        self.assertIn("DroverPipeline drover/shop", body["error"]["message"])
        self.assertEqual(admin.http("DELETE", "/api/v1/groups/default/pipelines/shop")[0], 409)
        #  Steering is not changing: a pause is judged as ever (no rollout under way here).
        status, body, _ = admin.http("POST", "/api/v1/groups/default/pipelines/shop/rollouts/current/pause")
        self.assertNotEqual(body.get("error", {}).get("kind"), "owned_by_resource", (status, body))
        #  kubectl describe tells the story.
        described = self.kubectl("describe", "droverpipeline", "shop", "-n", "drover").stdout
        self.assertIn("RolloutSucceeded", described)
        self.assertIn("RolloutStarted", described)
        #  Deleted: the pipeline is shut down.
        self.kubectl("delete", "droverpipeline", "shop", "-n", "drover")
        wait_until(lambda: self.pipeline(admin, "shop") is None, 30, "the pipeline gone with its resource")

    def test_sigkill_while_resources_change_then_converge_and_a_410_changes_nothing(self):
        gen = {"g": {"type": "receiver:generator", "config": {"rate": 10}, "to": ["o"]}, "o": {"type": "exporter:null"}}
        engine, admin = self.start()
        self.apply("a", gen)
        self.apply("b", gen)
        self.serving(admin, "a", 1)
        self.serving(admin, "b", 1)
        engine.signal(signal.SIGKILL)  # droverd is PID 1 of its namespace: every child goes with it
        engine.wait_exit(10)
        changed = dict(gen, g={"type": "receiver:generator", "config": {"rate": 20}, "to": ["o"]})
        self.apply("a", changed)
        self.kubectl("delete", "droverpipeline", "b", "-n", "drover")
        self.apply("c", gen)
        engine.log.close()
        engine.start(env={"POD_NAME": "pod-a"})
        admin.wait_ready(20)
        self.serving(admin, "a", 2)
        self.serving(admin, "c", 1)
        wait_until(lambda: self.pipeline(admin, "b") is None, 30, "b gone while droverd was down: shut down")
        a = self.pipeline(admin, "a")
        self.assertEqual(a["spec"]["nodes"]["g"]["config"]["rate"], 20)
        rollouts = len(admin.http("GET", "/api/v1/groups/default/pipelines/a/rollouts")[1])
        #  A 410: the watch lists again and finds everything as it runs.
        self.api.expire()
        wait_until(lambda: engine.log_text().count("kubernetes: watching") >= 1 and
                   admin.http("GET", "/api/v1/engine")[1]["kubernetes"]["relists"] >= 1, 20, "relisted after the 410")
        self.apply("c", dict(gen, g={"type": "receiver:generator", "config": {"rate": 30}, "to": ["o"]}))
        self.serving(admin, "c", 2)  # the watch goes on after the relist
        self.assertEqual(len(admin.http("GET", "/api/v1/groups/default/pipelines/a/rollouts")[1]), rollouts,
                         "no rollout of a unchanged")

    def test_a_resource_takes_over_a_pipeline_of_the_config_file_and_a_reload_skips_it(self):
        declared = """
      shop:
        cores: {count: 1}
        nodes:
          g: {type: "receiver:generator", config: {rate: 5}, to: [o]}
          o: {type: "exporter:null"}
"""
        config = self.config().replace("pipelines: {}", "pipelines: " + declared)
        engine = self.start_engine(config, env={"POD_NAME": "pod-a"})
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        self.assertEqual(self.pipeline(admin, "shop")["status"]["source"], "config")
        self.apply("shop", {"g": {"type": "receiver:generator", "config": {"rate": 7}, "to": ["o"]},
                            "o": {"type": "exporter:null"}})
        self.serving(admin, "shop", 1)
        body = wait_until(lambda: (lambda b: b if b["status"]["generation"] == 2 else None)(
            self.pipeline(admin, "shop")), 30, "the resource's spec applied")
        self.assertEqual((body["status"]["source"], body["spec"]["nodes"]["g"]["config"]["rate"]), ("kubernetes", 7))
        engine.signal(signal.SIGHUP)
        engine.wait_log(r'reload: skipped pipeline=default:shop reason="owned by DroverPipeline drover/shop', 20)
        self.assertEqual(self.pipeline(admin, "shop")["spec"]["nodes"]["g"]["config"]["rate"], 7)
        #  The resource moves its pipeline to another group: the old one goes.
        self.apply("shop", {"g": {"type": "receiver:generator", "config": {"rate": 7}, "to": ["o"]},
                            "o": {"type": "exporter:null"}}, group="other")
        wait_until(lambda: self.pipeline(admin, "shop", "other") and not self.pipeline(admin, "shop"), 30,
                   "other/shop running and default/shop shut down")

    def test_a_wrong_engine_kubernetes_is_refused_naming_each_mistake(self):
        from harness import DROVERD
        path = os.path.join(self.dir, "bad.yaml")
        for wrong, said in (('api: {server: "ftp://x"}', "engine.kubernetes.api: server: must be in_cluster or an "
                                                          "http:// or https:// URL"),
                            ("api: {server: in_cluster, token_file: relative}",
                             "engine.kubernetes.api: token_file: must be an absolute path"),
                            ("api: {cert: x}", 'engine.kubernetes.api: cert: unknown key'),
                            ("watch: {namespace: Drover}", "engine.kubernetes.watch.namespace: must be a namespace"),
                            ('watch: {label_selector: "a=b&c=d"}', "engine.kubernetes.watch.label_selector: must be"),
                            ("watch: {field: x}", 'engine.kubernetes.watch.field: unknown key "field"'),
                            ("extra: 1", 'engine.kubernetes.extra: unknown key "extra"'),
                            ("[1]", "engine.kubernetes: must be a map")):
            with open(path, "w") as f:
                body = f"  kubernetes: {wrong}\n" if wrong.startswith("[") else f"  kubernetes:\n    {wrong}\n"
                f.write(f"engine:\n  run_dir: /tmp/drv-bad\n{body}groups: {{default: {{pipelines: {{}}}}}}\n")
            check = subprocess.run([DROVERD, "--check", "-c", path], capture_output=True, text=True, timeout=30)
            self.assertEqual(check.returncode, 100, (wrong, check.stderr))
            self.assertIn(said, check.stderr, wrong)
        #  in_cluster outside a cluster: refused at start, with the reason.
        with open(path, "w") as f:
            f.write(self.config().replace(f'server: "{self.api.url()}"', "server: in_cluster")
                    .replace("{RUN}", os.path.join(self.dir, "run")))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        start = subprocess.run([DROVERD, "-c", path], capture_output=True, text=True, timeout=30, env=env)
        self.assertNotEqual(start.returncode, 0)
        self.assertIn("engine.kubernetes: api.server in_cluster: KUBERNETES_SERVICE_HOST", start.stderr)

    def test_two_droverds_keep_their_own_status_entries(self):
        gen = {"g": {"type": "receiver:generator", "config": {"rate": 10}, "to": ["o"]}, "o": {"type": "exporter:null"}}
        _, admin_a = self.start("pod-a")
        second_port = free_port()
        from harness import Engine
        second = Engine(self.config(second_port), name="second").start(env={"POD_NAME": "pod-b"})
        self.addCleanup(second.cleanup)
        admin_b = Admin(second, second_port)
        admin_b.wait_ready(20)
        self.apply("shared", gen)
        wait_until(lambda: self.entry("shared", "pod-a").get("phase") == "running" and
                   self.entry("shared", "pod-b").get("phase") == "running", 30, "both entries")
        self.assertTrue(self.pipeline(admin_a, "shared") and self.pipeline(admin_b, "shared"))
        status = self.resource("shared")["status"]["engines"]
        self.assertEqual(set(status), {"pod-a", "pod-b"})
        for entry in status.values():
            self.assertEqual(entry["observedGeneration"], 1)
            self.assertIn("updatedAt", entry)


if __name__ == "__main__":
    unittest.main()
