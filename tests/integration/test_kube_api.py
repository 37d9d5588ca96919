"""The fake Kubernetes API server of the tests (kube_api.py) speaks the real
protocol: driven by clients nobody here wrote — Debian's kubectl (get,
get -w, apply, delete) and the kubernetes Python client (python3-kubernetes:
list with a field selector, a watch that sees what changes, a 410 that
ends it) — over HTTPS with a CA and a bearer token, as processor:kubernetes
speaks to it (test_kubernetes.py)."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import kubernetes

from capture import self_signed_cert
from harness import wait_until
from kube_api import KubeApi, kubectl_env, pod


class FakeApiWithRealClients(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="drv-kapi-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.cert, key = self_signed_cert(self.dir)
        self.api = KubeApi(token="sekret", certfile=self.cert, keyfile=key)
        self.addCleanup(self.api.close)
        self.api.put("pods", pod("a", "n1", ip="10.0.0.1"))
        self.api.put("pods", pod("b", "n2", ip="10.0.0.2"))
        self.env = kubectl_env(self.api, self.cert, "sekret", self.dir)

    def kubectl(self, *args, check=True):
        done = subprocess.run(["kubectl", *args], env=self.env, capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(done.returncode, 0, done.stderr)
        return done

    def test_kubectl_lists_watches_applies_and_deletes(self):
        self.assertEqual(self.kubectl("get", "pods", "-o", "name").stdout.split(), ["pod/a", "pod/b"])
        only_n1 = self.kubectl("get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "name").stdout.split()
        self.assertEqual(only_n1, ["pod/a"])
        watch = subprocess.Popen(["kubectl", "get", "pods", "-w", "-o", "name"], env=self.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(watch.kill)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(watch.stdout), daemon=True)
        reader.start()
        wait_until(lambda: self.api.watch_count() >= 1, 30, "kubectl watching")
        manifest = os.path.join(self.dir, "c.yaml")
        with open(manifest, "w") as f:
            f.write("apiVersion: v1\nkind: Pod\nmetadata: {name: c, labels: {app: shop}}\n"
                    "spec: {nodeName: n1, containers: [{name: app, image: nginx}]}\n")
        self.assertIn("pod/c created", self.kubectl("apply", "--validate=false", "-f", manifest).stdout)
        self.assertIn('pod "a" deleted', self.kubectl("delete", "pod", "a").stdout)
        self.assertEqual(self.api.objects[("pods", "default", "c")]["metadata"]["labels"], {"app": "shop"})
        wait_until(lambda: lines.count("pod/c\n") >= 1 and lines.count("pod/a\n") >= 2, 30,
                   "the watch printing the pod created and the pod deleted")
        watch.kill()
        self.assertNotIn("pod/a", self.kubectl("get", "pods", "-o", "name").stdout.split())

    def test_kubectl_applies_changes_and_describes_a_custom_resource_with_its_status_and_events(self):
        manifest = os.path.join(self.dir, "p.yaml")

        def apply(lines):
            with open(manifest, "w") as f:
                f.write("apiVersion: drover.dev/v1alpha1\nkind: DroverPipeline\n"
                        "metadata: {name: shop, namespace: drover, labels: {drover.dev/engine: node}}\n"
                        f"spec: {{group: default, pipeline: {{cores: {{count: 1}}, nodes: {{{lines}}}}}}}\n")
            return self.kubectl("apply", "--validate=false", "-f", manifest).stdout
        self.assertIn("droverpipeline.drover.dev/shop created", apply("a: {type: receiver:generator}"))
        key = ("droverpipelines", "drover", "shop")
        self.assertEqual(self.api.objects[key]["metadata"]["generation"], 1)
        self.assertIn("configured", apply("b: {type: receiver:generator}"))  # a merge patch
        self.assertEqual(self.api.objects[key]["spec"]["pipeline"]["nodes"], {"b": {"type": "receiver:generator"}})
        self.assertEqual(self.api.objects[key]["metadata"]["generation"], 2, "a spec change is a generation")
        self.assertTrue(any(p[:4] == ("droverpipelines", "drover", "shop", None) for p in self.api.patches))
        self.kubectl("patch", "droverpipeline", "shop", "-n", "drover", "--subresource=status", "--type=merge",
                     "-p", '{"status": {"engines": {"pod-a": {"phase": "Ready"}}}}')
        self.kubectl("patch", "droverpipeline", "shop", "-n", "drover", "--subresource=status", "--type=merge",
                     "-p", '{"status": {"engines": {"pod-b": {"phase": "Progressing"}}}}')
        got = json.loads(self.kubectl("get", "droverpipelines", "-n", "drover", "-l", "drover.dev/engine=node",
                                      "-o", "json").stdout)
        [item] = got["items"]
        self.assertEqual(item["status"], {"engines": {"pod-a": {"phase": "Ready"}, "pod-b": {"phase": "Progressing"}}})
        self.assertEqual(item["metadata"]["generation"], 2, "a status patch is not a generation")
        self.assertEqual(self.kubectl("get", "droverpipelines", "-A", "-l", "drover.dev/engine=other",
                                      "-o", "name").stdout.split(), [])
        uid = item["metadata"]["uid"]
        self.api.put("events", {"metadata": {"name": "shop.1", "namespace": "drover"}, "reason": "RolloutSucceeded",
                                "message": "generation 2 is serving", "type": "Normal", "count": 1,
                                "involvedObject": {"kind": "DroverPipeline", "namespace": "drover", "name": "shop",
                                                   "uid": uid, "apiVersion": "drover.dev/v1alpha1"},
                                "source": {"component": "droverd"}})
        described = self.kubectl("describe", "droverpipeline", "shop", "-n", "drover").stdout
        self.assertIn("RolloutSucceeded", described)
        self.assertIn("generation 2 is serving", described)
        self.assertIn("Progressing", described)  # the engines, each under its name
        self.assertIn('"shop" deleted', self.kubectl("delete", "-f", manifest).stdout)

    def test_kubectl_without_the_token_is_refused(self):
        self.api.token = "another"
        done = self.kubectl("get", "pods", check=False)
        self.assertNotEqual(done.returncode, 0)
        self.assertTrue(any(not ok for _, _, ok in self.api.requests))

    def test_the_python_client_lists_watches_and_is_told_410(self):
        config = kubernetes.client.Configuration()
        config.host = self.api.url()
        config.ssl_ca_cert = self.cert
        config.api_key = {"authorization": "Bearer sekret"}
        core = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(config))
        listed = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n2", limit=1)
        self.assertEqual([p.metadata.name for p in listed.items], ["b"])
        rv = core.list_namespaced_pod("default").metadata.resource_version
        seen, errors = [], []

        def watch():
            try:
                for event in kubernetes.watch.Watch().stream(core.list_namespaced_pod, "default",
                                                             resource_version=rv, timeout_seconds=20):
                    seen.append((event["type"], event["object"].metadata.name))
            except kubernetes.client.exceptions.ApiException as e:
                errors.append(e.status)
            except Exception as e:  # anything else fails the test, with what it was
                errors.append(repr(e))
        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        wait_until(lambda: self.api.watch_count() >= 1 or errors, 30, "the python client watching")
        self.assertEqual(errors, [])
        self.api.put("pods", pod("d", "n1"))
        self.api.delete("pods", "default", "b")
        wait_until(lambda: ("ADDED", "d") in seen and ("DELETED", "b") in seen, 30, "the watch seeing both")
        self.api.expire()  # its watch ends: the client raises the 410 it was sent
        thread.join(30)
        self.assertEqual(errors, [410])


if __name__ == "__main__":
    unittest.main()
