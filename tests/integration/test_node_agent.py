"""The node agent as shipped (issue 49, docs/deploy.md "The node agent"):
deploy/drover-node.yaml is the DaemonSet's ConfigMap, its every pipeline
ships to the one OTLP endpoint ${env:DROVER_EXPORT_ENDPOINT} names and
tags every record with ${env:NODE_NAME}, the DaemonSet sets both, and
droverd --check accepts it with them and refuses it without. Then the same
text run for real (paths and ports moved under a temporary directory):
a pod's CRI log, an OTLP request from an application and msgpack pushed
by drover-produce all reach the backend, each with k8s.node.name, the pod
log and the OTLP with their pod's metadata from the Kubernetes API (the
fake one of kube_api.py, as the ServiceAccount the manifests bind would
read it); none lands in a file on the node."""

import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

from capture import Capture, self_signed_cert
from grpc_otlp import WHY_NOT, pb
from harness import BIN, Admin, EngineTest, curl_post, free_port, wait_until
from kube_api import KubeApi, owned, pod as pod_object
from test_deploy import DEPLOY, kustomize, read


class NodeAgentConfig(unittest.TestCase):
    def setUp(self):
        self.by_kind = {}
        for d in kustomize(os.path.join(DEPLOY, "kubernetes", "daemonset")):
            self.by_kind.setdefault(d["kind"], []).append(d)

    def configmap(self, name):
        (cm,) = [d for d in self.by_kind["ConfigMap"] if d["metadata"]["name"] == name]
        return cm

    def test_the_service_account_may_read_what_processor_kubernetes_watches(self):
        """The DaemonSet runs as a ServiceAccount whose ClusterRole lets it
        get, list and watch pods, ReplicaSets and Jobs, and nothing more;
        every pipeline with pods in it passes processor:kubernetes."""
        (account,) = self.by_kind["ServiceAccount"]
        (role,) = self.by_kind["ClusterRole"]
        (binding,) = self.by_kind["ClusterRoleBinding"]
        (daemonset,) = self.by_kind["DaemonSet"]
        self.assertEqual(daemonset["spec"]["template"]["spec"]["serviceAccountName"], account["metadata"]["name"])
        self.assertEqual(binding["roleRef"]["name"], role["metadata"]["name"])
        self.assertEqual(binding["subjects"][0]["name"], account["metadata"]["name"])
        granted = {(g, r): sorted(rule["verbs"]) for rule in role["rules"]
                   for g in rule["apiGroups"] for r in rule["resources"]}
        self.assertEqual(granted, {("", "pods"): ["get", "list", "watch"],
                                   ("apps", "replicasets"): ["get", "list", "watch"],
                                   ("batch", "jobs"): ["get", "list", "watch"]})
        config = yaml.safe_load(self.configmap("drover-node-config")["data"]["drover.yaml"])
        for name in ("otlp", "node"):
            nodes = config["groups"]["default"]["pipelines"][name]["nodes"]
            (k8s,) = [n for n in nodes.values() if n["type"] == "processor:kubernetes"]
            self.assertEqual(k8s["config"], {"api": {"server": "in_cluster"}, "node": "${env:NODE_NAME}"})

    def test_the_shipped_config_sends_everything_to_one_endpoint_from_its_environment(self):
        """The DaemonSet's own ConfigMap is deploy/drover-node.yaml: the
        base's engine, and every pipeline (zmq ingest, the node's OTLP, pod
        logs and the journal) through a disk buffer to the one exporter:otlp
        ${env:DROVER_EXPORT_ENDPOINT} names, each record tagged with
        ${env:NODE_NAME}; the DaemonSet sets both (the node's name from the
        downward API), the pod mounts what it reads read-only, and droverd
        --check accepts it with that environment, refusing it without."""
        node = read(DEPLOY, "drover-node.yaml")
        self.assertEqual(self.configmap("drover-node-config")["data"]["drover.yaml"], node)
        config = yaml.safe_load(node)
        base = yaml.safe_load(read(DEPLOY, "drover.yaml"))
        self.assertEqual(config["engine"], base["engine"])
        pipelines = config["groups"]["default"]["pipelines"]
        self.assertEqual(set(pipelines), {"ingest", "otlp", "node", "host"})
        for name, pipeline in pipelines.items():
            nodes = pipeline["nodes"]
            self.assertEqual([n["type"] for n in nodes.values() if n["type"].startswith("exporter:")],
                             ["exporter:otlp"], f"{name}: one exporter, no file")
            self.assertEqual(nodes["backend"]["config"]["endpoint"], "${env:DROVER_EXPORT_ENDPOINT}", name)
            self.assertEqual(nodes["node_name"]["config"]["set"], {'resource["k8s.node.name"]': "${env:NODE_NAME}"})
            receivers = [n for n in nodes.values() if n["type"].startswith("receiver:")]
            #  Straight to node_name, or first through processor:kubernetes (pods, OTLP).
            self.assertTrue(receivers and all(len(r["to"]) == 1 for r in receivers), name)
            for first in {r["to"][0] for r in receivers} - {"node_name"}:
                self.assertEqual((nodes[first]["type"], nodes[first]["to"]), ("processor:kubernetes", ["node_name"]))
            self.assertEqual(nodes["node_name"]["to"], ["backend"])
            self.assertEqual(pipeline["policies"]["buffer"]["type"], "disk", name)
        nodes = pipelines["node"]["nodes"]
        self.assertEqual(nodes["pods"]["config"], {"include": ["/var/log/pods/*/*/*.log"], "format": "cri",
                                                   "kubernetes": True})
        self.assertEqual(nodes["journal"]["type"], "receiver:journald")
        (daemonset,) = self.by_kind["DaemonSet"]
        pod = daemonset["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["NODE_NAME"]["valueFrom"], {"fieldRef": {"fieldPath": "spec.nodeName"}})
        self.assertTrue(env["DROVER_EXPORT_ENDPOINT"]["value"].startswith("http"))
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        for path in ("/var/log/pods", "/var/log/journal", "/run/log/journal", "/etc/machine-id"):
            self.assertTrue(mounts[path]["readOnly"], path)
            self.assertEqual(volumes[mounts[path]["name"]]["hostPath"]["path"], path)
        #  Host metrics: the host's root, read-only, its submounts (its /proc) seen.
        self.assertEqual(pipelines["host"]["nodes"]["host"]["config"]["root_path"], "/hostfs")
        self.assertEqual((mounts["/hostfs"]["readOnly"], mounts["/hostfs"]["mountPropagation"]),
                         (True, "HostToContainer"))
        self.assertEqual(volumes[mounts["/hostfs"]["name"]]["hostPath"]["path"], "/")
        self.assertEqual(volumes["config"]["configMap"]["name"], "drover-node-config")
        with tempfile.TemporaryDirectory(prefix="drv-check-") as d:
            with open(os.path.join(d, "token"), "w") as f:
                f.write("0123456789abcdef0123\n")
            path = os.path.join(d, "drover.yaml")
            with open(path, "w") as f:
                f.write(node.replace("/etc/drover/secrets/token", os.path.join(d, "token")))
            bare = {k: v for k, v in os.environ.items() if k not in env}
            check = subprocess.run([f"{BIN}/droverd", "--check", "-c", path], capture_output=True, text=True,
                                   env={**bare, "NODE_NAME": "node-1",
                                        "DROVER_EXPORT_ENDPOINT": env["DROVER_EXPORT_ENDPOINT"]["value"]})
            self.assertEqual(check.returncode, 0, check.stderr)
            check = subprocess.run([f"{BIN}/droverd", "--check", "-c", path], capture_output=True, text=True, env=bare)
            self.assertEqual(check.returncode, 100, check.stderr)
            self.assertIn("${env:NODE_NAME}: NODE_NAME is not set", check.stderr)


@unittest.skipIf(WHY_NOT, WHY_NOT)
class NodeAgentShips(EngineTest):
    def test_pod_logs_otlp_and_zmq_all_reach_the_backend_with_the_node_name(self):
        capture = Capture()
        self.addCleanup(capture.close)
        root = tempfile.mkdtemp(prefix="drv-node-")
        self.addCleanup(shutil.rmtree, root, True)
        for d in ("state", "pods", "journal", "secrets"):
            os.makedirs(os.path.join(root, d))
        with open(os.path.join(root, "secrets", "token"), "w") as f:
            f.write("0123456789abcdef0123\n")
        http, otlp, grpc, zmq = free_port(), free_port(), free_port(), free_port()
        #  The API the service account reads: the pod whose log is read, and
        #  the one that sends OTLP from its IP.
        cert, key = self_signed_cert(root)
        api = KubeApi(token="sa-token", certfile=cert, keyfile=key)
        self.addCleanup(api.close)
        with open(os.path.join(root, "secrets", "sa-token"), "w") as f:
            f.write("sa-token\n")
        api.put("replicasets", owned("ReplicaSet", "web-5c8d", "shop", ("Deployment", "web")))
        api.put("pods", pod_object("web-1", "node-7", "shop", ip="10.9.0.4", uid="6f1c2a",
                                   owner=("ReplicaSet", "web-5c8d"), labels={"app": "web"},
                                   containers={"nginx": "nginx:1.25"}))
        api.put("pods", pod_object("app-0", "node-7", "apps", ip="10.9.0.5", owner=("StatefulSet", "app")))
        text = read(DEPLOY, "drover-node.yaml")
        for old, new in (("/run/drover/sockets", "{RUN}"), ("/var/lib/drover", f"{root}/state"),
                         ("/etc/drover/secrets/token", f"{root}/secrets/token"),
                         ("0.0.0.0:8080", f"127.0.0.1:{http}"), ("0.0.0.0:4318", f"127.0.0.1:{otlp}"),
                         ("0.0.0.0:4317", f"127.0.0.1:{grpc}"), ("tcp://0.0.0.0:5555", f"tcp://127.0.0.1:{zmq}"),
                         ("/var/log/pods/", f"{root}/pods/"),
                         ("config: {}", f'config: {{directory: "{root}/journal"}}'),
                         ("api: { server: in_cluster }", f'api: {{ server: "{api.url()}", token_file: '
                                                         f'"{root}/secrets/sa-token", ca_file: "{cert}" }}'),
                         ("interval_secs: 10, root_path: /hostfs", "interval_secs: 1, root_path: /")):
            self.assertIn(old, text)
            text = text.replace(old, new)  # every occurrence (both processor:kubernetes)
        engine = self.start_engine(text, env={"NODE_NAME": "node-7", "DROVER_EXPORT_ENDPOINT": capture.url()})
        Admin(engine, http).wait_ready(30)
        #  A pod's container log, as the kubelet lays it out.
        pod = os.path.join(root, "pods", "shop_web-1_6f1c2a", "nginx")
        os.makedirs(pod)
        with open(os.path.join(pod, "0.log"), "w") as f:
            f.write("2026-11-29T01:50:00.000000000Z stdout F from the pod\n")
        #  An application's OTLP, and a producer's msgpack over zmq.
        request = {"resourceLogs": [{"resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "app"}},
            {"key": "k8s.pod.ip", "value": {"stringValue": "10.9.0.5"}}]},
            "scopeLogs": [{"logRecords": [{"body": {"stringValue": "from otlp"}}]}]}]}
        status, _, _, _ = curl_post(otlp, "/v1/logs", json.dumps(request).encode(), "application/json")
        self.assertEqual(status, 200)
        produced = subprocess.run([f"{BIN}/drover-produce", f"tcp://127.0.0.1:{zmq}"],
                                  input=b'{"body": "from zmq"}\n', capture_output=True, timeout=30)
        self.assertEqual(produced.returncode, 0, produced.stderr)

        def arrived():  # the shipped exporter speaks OTLP/HTTP protobuf
            found = {}
            for body in [r.body for r in list(capture.accepted) if r.path == "/v1/logs"]:
                request = pb().logs_service.ExportLogsServiceRequest()
                request.ParseFromString(body)
                for rl in request.resource_logs:
                    resource = {a.key: a.value.string_value for a in rl.resource.attributes}
                    for sl in rl.scope_logs:
                        for r in sl.log_records:
                            found[r.body.string_value] = resource
            return found if {"from the pod", "from otlp", "from zmq"} <= set(found) else None

        found = wait_until(arrived, 30, "a record of each kind at the backend")

        def host_metrics():  # the node's own, as OTLP metrics to the same backend
            names = {}
            for r in list(capture.accepted):
                if r.path != "/v1/metrics":
                    continue
                request = pb().metrics_service.ExportMetricsServiceRequest()
                request.ParseFromString(r.body)
                for rm in request.resource_metrics:
                    resource = {a.key: a.value.string_value for a in rm.resource.attributes}
                    for sm in rm.scope_metrics:
                        names.update({m.name: resource for m in sm.metrics})
            return names if "system.cpu.time" in names else None
        metrics = wait_until(host_metrics, 30, "the node's metrics at the backend")
        self.assertEqual(metrics["system.cpu.time"].get("k8s.node.name"), "node-7")
        self.assertIn("system.filesystem.usage", metrics)
        for body in ("from the pod", "from otlp", "from zmq"):
            self.assertEqual(found[body].get("k8s.node.name"), "node-7", body)
        self.assertEqual(found["from the pod"].get("k8s.pod.name"), "web-1")
        self.assertEqual(found["from the pod"].get("k8s.deployment.name"), "web", "from the API")
        self.assertEqual(found["from the pod"].get("container.image.name"), "nginx")
        self.assertEqual(found["from otlp"].get("k8s.statefulset.name"), "app", "found by its pod IP")
        self.assertEqual(found["from zmq"].get("k8s.pod.name"), None)
        self.assertTrue(any("fieldSelector=spec.nodeName%3Dnode-7" in p for _, p, _ in api.requests))
        self.assertEqual(found["from otlp"].get("service.name"), "app")
        self.assertEqual(glob.glob(os.path.join(root, "state", "*.ndjson")), [], "nothing written to files on the node")


if __name__ == "__main__":
    unittest.main()
