"""processor:kubernetes (docs/kubernetes.md) through the real binaries,
against the fake API server of kube_api.py (proven with kubectl and the
kubernetes Python client in test_kube_api.py), over HTTPS with a CA file
and a bearer token file: CRI files laid out as the kubelet does, pods on
two nodes with owners, labels and annotations; every record enriched as
configured, only this node's pods watched, a pod added later enriched, a
410 relists without losing a record, a rotated token re-read, OTLP found
by its pod IP, an unknown pod passed and counted."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

import msgpack

import grpc_otlp
from capture import self_signed_cert
from harness import Admin, EngineTest, curl_post, engine_yaml, free_port, wait_until
from kube_api import KubeApi, owned, pod

UID_WEB = "11111111-0000-0000-0000-000000000001"
UID_CRON = "11111111-0000-0000-0000-000000000002"
UID_DB = "11111111-0000-0000-0000-000000000003"
UID_OTHER_NODE = "11111111-0000-0000-0000-000000000004"
UID_LATER = "11111111-0000-0000-0000-000000000005"


class Kubernetes(EngineTest):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="drv-k8s-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        cert, key = self_signed_cert(self.dir)
        self.api = KubeApi(token="first-token", certfile=cert, keyfile=key)
        self.addCleanup(self.api.close)
        self.ca, self.token_file = cert, os.path.join(self.dir, "token")
        with open(self.token_file, "w") as f:
            f.write("first-token\n")  # read trimmed of its line break
        self.pods_dir = os.path.join(self.dir, "pods")
        self.http_port, self.otlp_port, self.grpc_port = free_port(), free_port(), free_port()
        api = self.api
        api.put("replicasets", owned("ReplicaSet", "web-7d9f", "shop", ("Deployment", "web")))
        api.put("jobs", owned("Job", "report-290", "ops", ("CronJob", "report")))
        api.put("pods", pod("web-7d9f-abc", "n1", "shop", ip="10.1.0.5", uid=UID_WEB, owner=("ReplicaSet", "web-7d9f"),
                            labels={"app.kubernetes.io/name": "web", "tier": "front", "team.io/owner": "payments"},
                            annotations={"team": "payments", "ignored": "x"},
                            containers={"server": "registry.example/shop/web:2.4.1", "sidecar": "envoy"}))
        api.put("pods", pod("report-290-xyz", "n1", "ops", ip="10.1.0.6", uid=UID_CRON, owner=("Job", "report-290")))
        api.put("pods", pod("db-0", "n1", "data", ip="10.1.0.7", uid=UID_DB, owner=("StatefulSet", "db"),
                            containers={"pg": "postgres@sha256:abcd"}))
        api.put("pods", pod("elsewhere", "n2", "shop", ip="10.2.0.9", uid=UID_OTHER_NODE))

    def config(self):
        pipelines = f"""
      node:
        cores: {{count: 1}}
        nodes:
          pods: {{type: "receiver:file", config: {{include: ["{self.pods_dir}/*/*/*.log"], format: cri,
                  kubernetes: true, start_at: beginning, poll_interval_ms: 200}}, to: [k8s]}}
          otlp: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{self.otlp_port}",
                  grpc_endpoint: "127.0.0.1:{self.grpc_port}"}}, to: [k8s]}}
          k8s:
            type: "processor:kubernetes"
            config:
              api: {{server: "{self.api.url()}", token_file: "{self.token_file}", ca_file: "{self.ca}"}}
              node: n1
              extract:
                labels: [{{key: app.kubernetes.io/name, attribute: app}}, {{key_regex: "^team\\\\."}}]
                annotations: [{{key: team}}]
            to: [out]
          out: {{type: "exporter:file", config: {{path: "{{OUT}}/out.ndjson"}}}}
"""
        return engine_yaml(pipelines, "  heartbeat_interval_ms: 1000\n").replace("HTTP", str(self.http_port))

    def write_log(self, namespace, name, uid, container, lines):
        directory = os.path.join(self.pods_dir, f"{namespace}_{name}_{uid}", container)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "0.log"), "a") as f:
            for line in lines:
                f.write(f"2026-11-29T10:00:00.000000000Z stdout F {line}\n")

    def out(self):
        path = os.path.join(self.engine.out_dir, "out.ndjson")
        if not os.path.exists(path):
            return {}
        with open(path) as f:
            return {r["body"]: r for r in map(json.loads, f) if isinstance(r.get("body"), str)}

    def wait_records(self, bodies, timeout=20):
        return wait_until(lambda: (lambda o: o if all(b in o for b in bodies) else None)(self.out()), timeout,
                          f"records {bodies}")

    def details(self):
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/node/status")
        nodes = body["instances"][0]["nodes"] if status == 200 and body["instances"] else {}
        return (nodes or {}).get("k8s", {}).get("kubernetes")

    def start(self):
        engine = self.start_engine(self.config())
        self.admin = Admin(engine, self.http_port)
        self.admin.wait_ready(20)
        wait_until(lambda: (self.details() or {}).get("pods") == 3, 20, "the cache filled from the list: n1's 3 pods")
        return engine

    def test_records_of_this_nodes_pods_get_their_metadata_owners_labels_and_annotations(self):
        self.write_log("shop", "web-7d9f-abc", UID_WEB, "server", ["web says hi"])
        self.write_log("ops", "report-290-xyz", UID_CRON, "main", ["report ran"])
        self.write_log("data", "db-0", UID_DB, "pg", ["db ready"])
        self.write_log("shop", "elsewhere", UID_OTHER_NODE, "c", ["not on this node"])
        self.write_log("shop", "ghost", "11111111-0000-0000-0000-00000000dead", "c", ["no such pod"])
        self.start()
        out = self.wait_records(["web says hi", "report ran", "db ready", "not on this node", "no such pod"])
        web = out["web says hi"]["resource"]
        self.assertEqual(web["k8s.namespace.name"], "shop")
        self.assertEqual(web["k8s.pod.name"], "web-7d9f-abc")
        self.assertEqual(web["k8s.pod.uid"], UID_WEB)
        self.assertEqual(web["k8s.pod.ip"], "10.1.0.5")
        self.assertEqual(web["k8s.node.name"], "n1")
        self.assertEqual(web["k8s.pod.start_time"], "2026-11-29T10:00:00Z")
        self.assertEqual(web["k8s.replicaset.name"], "web-7d9f")
        self.assertEqual(web["k8s.deployment.name"], "web")
        self.assertEqual(web["container.image.name"], "registry.example/shop/web")
        self.assertEqual(web["container.image.tag"], "2.4.1")
        self.assertEqual(web["app"], "web")
        self.assertEqual(web["k8s.pod.labels.team.io/owner"], "payments")
        self.assertEqual(web["k8s.pod.annotations.team"], "payments")
        self.assertNotIn("k8s.pod.labels.tier", web)
        self.assertNotIn("k8s.pod.annotations.ignored", web)
        self.assertEqual(web["k8s.container.name"], "server", "what the file receiver set stays")
        cron = out["report ran"]["resource"]
        self.assertEqual((cron["k8s.job.name"], cron["k8s.cronjob.name"]), ("report-290", "report"))
        self.assertNotIn("container.image.name", cron, "its container main is not in the pod's spec")
        db = out["db ready"]["resource"]
        self.assertEqual(db["k8s.statefulset.name"], "db")
        self.assertEqual((db["container.image.name"], db["container.image.tag"]), ("postgres", "latest"))
        #  Only n1's pods are watched: n2's pod is not known here.
        self.assertNotIn("k8s.node.name", out["not on this node"]["resource"])
        self.assertNotIn("k8s.node.name", out["no such pod"]["resource"])
        self.assertTrue(any("fieldSelector=spec.nodeName%3Dn1" in p for m, p, _ in self.api.requests if "/pods" in p))
        details = wait_until(lambda: (lambda d: d if d and d["unmatched"] >= 2 else None)(self.details()), 10,
                             "unmatched counted")
        self.assertEqual(details["enriched"], 3)
        self.assertEqual(details["watch"], "watching")
        status, metrics, _ = self.admin.http("GET", "/metrics")
        text = metrics if isinstance(metrics, str) else metrics.decode()
        labels = 'group="default",pipeline="node",node="k8s",generation="1"'
        for line in (f"drover_kubernetes_pods{{{labels}}} 3", f"drover_kubernetes_watching{{{labels}}} 1",
                     f"drover_kubernetes_enriched_records_total{{{labels}}} 3",
                     f"drover_kubernetes_relists_total{{{labels}}} 0"):
            self.assertIn(line, text.splitlines())
        self.assertTrue(any(l.startswith(f"drover_kubernetes_unmatched_records_total{{{labels}}} ")
                            for l in text.splitlines()))

    def test_a_wrong_config_is_refused_naming_each_mistake(self):
        engine = self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        bad = {"api": {"server": "ftp://api", "token_file": "relative/token", "cert": "x"},
               "node": 7,
               "associate": [{"from": "header", "attribute": "x"}, {"from": "resource", "attribute": "k8s.pod.name"},
                             {"from": "connection", "attribute": "x"}],
               "extract": {"metadata": ["k8s.pod.nmae"], "labels": [{"key_regex": "(", "attribute": "a"},
                                                                     {"key": "a", "key_regex": "b"}],
                           "annotations": "team", "owners": True},
               "deleted_grace_secs": -1}
        spec = {"pipeline": {"nodes": {"in": {"type": "receiver:generator", "to": ["k8s"]},
                                       "k8s": {"type": "processor:kubernetes", "config": bad, "to": ["out"]},
                                       "out": {"type": "exporter:null"}}}}
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/k", body=spec)
        self.assertEqual(status, 422, body)
        problems = {d["path"].removeprefix("nodes.k8s.config."): d["message"] for d in body["error"]["details"]}
        for path, said in (("api.server", "must be in_cluster or an http"), ("api.token_file", "absolute path"),
                           ("api.cert", "unknown key"), ("node", "a node's name"), ("associate[0]", "from must be"),
                           ("associate[1]", "k8s.pod.uid or k8s.pod.ip"),
                           ("associate[2]", "from: connection takes nothing else"),
                           ("extract.metadata[0]", "unknown attribute"), ("extract.labels[0]", "attribute only with key"),
                           ("extract.labels[1]", "{key: K} or {key_regex: R}"), ("extract.annotations", "a list"),
                           ("extract.owners", "unknown key"), ("deleted_grace_secs", "from 0 to 86400")):
            self.assertIn(said, problems.get(path, ""), (path, problems))
        spec["pipeline"]["nodes"]["k8s"]["config"] = {"extract": {"labels": [{"key_regex": "("}]}}
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/k", body=spec)
        self.assertEqual(status, 422, body)
        self.assertIn("key_regex does not compile", json.dumps(body))

    def test_an_api_answering_garbage_at_start_holds_records_a_while_then_lets_them_pass(self):
        """The first records wait for the first list (the pipeline pushes
        back), never longer than wait_for_metadata_secs, and the instance's
        loop is not held meanwhile: it heartbeats all along; the list that
        comes later enriches what follows."""
        self.api.garbage = True
        self.write_log("shop", "web-7d9f-abc", UID_WEB, "server", ["before the list"])
        engine = self.start_engine(self.config().replace("node: n1", "node: n1\n              wait_for_metadata_secs: 5"))
        self.admin = Admin(engine, self.http_port)
        beats = set()

        def passed():  # the heartbeats seen while the record waits
            try:
                status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/node/status")
            except OSError:
                return False  # droverd's admin is not listening yet
            if status == 200:
                beats.update(i["last_heartbeat_at"] for i in body.get("instances") or [])
            return "before the list" in self.out()
        wait_until(passed, 30, "the record passed at last", interval=0.1)
        self.assertGreaterEqual(len(beats - {None}), 3, f"heartbeats while the record waited: {beats}")
        out = self.out()
        self.assertNotIn("k8s.deployment.name", out["before the list"]["resource"], "passed without metadata")
        details = wait_until(lambda: (lambda d: d if d and d["watch_errors"] > 0 else None)(self.details()), 20,
                             "the failures counted")
        self.assertIn("not JSON", details["last_error"] or "")
        self.assertIn("pods not listed in time", engine.log_text())
        self.api.garbage = False  # the server mends: the backoff's next try lists
        #  Pods, ReplicaSets and Jobs each list on their own watch's backoff: the
        #  owners too before a record can name its Deployment.
        wait_until(lambda: (lambda d: d.get("pods") == 3 and d.get("owners") == 2)(self.details() or {}), 60,
                   "pods and owners listed once the server answers")
        self.write_log("shop", "web-7d9f-abc", UID_WEB, "server", ["after the list"])
        self.assertEqual(self.wait_records(["after the list"])["after the list"]["resource"]["k8s.deployment.name"],
                         "web")
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/node/status")
        self.assertEqual(body["instances"][0]["restarts"], 0, "never killed for missed heartbeats")

    def test_a_pod_added_later_a_410_and_a_rotated_token_lose_nothing(self):
        self.start()
        #  A pod the API learns of after the list: the watch brings it.
        self.api.put("pods", pod("later-1", "n1", "shop", ip="10.1.0.8", uid=UID_LATER))
        wait_until(lambda: (self.details() or {}).get("pods") == 4, 20, "the pod added later cached")
        self.write_log("shop", "later-1", UID_LATER, "c", ["later-0"])
        self.assertEqual(self.wait_records(["later-0"])["later-0"]["resource"]["k8s.pod.name"], "later-1")
        #  etcd compacted: the watch ends with a 410 and the cache lists again;
        #  lines written meanwhile are all read and enriched.
        self.api.expire()
        self.write_log("shop", "later-1", UID_LATER, "c", [f"later-{n}" for n in range(1, 200)])
        wait_until(lambda: (self.details() or {}).get("relists", 0) >= 1, 20, "a relist after the 410")
        self.api.put("pods", pod("later-2", "n1", "shop", uid=UID_LATER.replace("5", "6")))
        wait_until(lambda: (self.details() or {}).get("pods") == 5, 20, "watching again after the relist")
        out = self.wait_records([f"later-{n}" for n in range(200)])
        self.assertTrue(all(out[f"later-{n}"]["resource"].get("k8s.pod.name") == "later-1" for n in range(200)))
        #  The token rotates: the old one is refused from now on, the file
        #  holds the new one; the next connection reads it.
        with open(self.token_file + ".new", "w") as f:
            f.write("second-token\n")
        os.rename(self.token_file + ".new", self.token_file)
        self.api.token = "second-token"
        self.api.drop_watches()
        self.api.put("pods", pod("after-rotation", "n1", "shop", uid=UID_LATER.replace("5", "7")))
        wait_until(lambda: (self.details() or {}).get("pods") == 6, 20, "the pod added after the rotation cached")
        self.assertFalse(any(not ok for _, _, ok in self.api.requests), "no request was refused")

    def test_syslog_and_http_are_enriched_by_the_address_they_come_from(self):
        """logger (util-linux) and curl send from 127.0.0.1: the pod of that IP."""
        self.api.put("pods", pod("syslogger", "n1", "ops", ip="127.0.0.1", owner=("DaemonSet", "rsyslog")))
        udp, tcp, http = free_port(), free_port(), free_port()
        pipelines = f"""
      logs:
        cores: {{count: 1}}
        nodes:
          udp: {{type: "receiver:syslog", config: {{endpoint: "udp://127.0.0.1:{udp}"}}, to: [k8s]}}
          tcp: {{type: "receiver:syslog", config: {{endpoint: "tcp://127.0.0.1:{tcp}"}}, to: [k8s]}}
          http: {{type: "receiver:http", config: {{endpoint: "127.0.0.1:{http}"}}, to: [k8s]}}
          k8s:
            type: "processor:kubernetes"
            config: {{api: {{server: "{self.api.url()}", token_file: "{self.token_file}", ca_file: "{self.ca}"}},
                     node: n1, associate: [{{from: connection}}]}}
            to: [out]
          out: {{type: "exporter:file", config: {{path: "{{OUT}}/out.ndjson"}}}}
"""
        engine = self.start_engine(engine_yaml(pipelines).replace("HTTP", str(self.http_port)))
        Admin(engine, self.http_port).wait_ready(20)
        for flags, port, text in ((["-d"], udp, "over udp"), (["-T"], tcp, "over tcp")):
            subprocess.run(["logger", *flags, "-n", "127.0.0.1", "-P", str(port), "--rfc5424", "-t", "app", text],
                           check=True, timeout=10)
        self.assertEqual(curl_post(http, "/", b'{"message": "over http, json"}', "application/json")[0], 200)
        packed = msgpack.packb([{"message": "over http, msgpack"}])
        self.assertEqual(curl_post(http, "/", packed, "application/msgpack")[0], 200)
        path = os.path.join(engine.out_dir, "out.ndjson")
        rows = wait_until(lambda: (lambda r: r if len(r) >= 4 else None)(
            [json.loads(l) for l in open(path)] if os.path.exists(path) else []), 20, "four records")
        for row in rows:
            self.assertEqual((row["resource"]["client.address"], row["resource"]["k8s.pod.name"],
                              row["resource"]["k8s.daemonset.name"]), ("127.0.0.1", "syslogger", "rsyslog"), row)

    def test_otlp_is_enriched_by_the_pod_ip_it_names_or_by_the_address_it_connects_from(self):
        self.start()
        body = {"resourceLogs": [{"resource": {"attributes": [
            {"key": "k8s.pod.ip", "value": {"stringValue": "10.1.0.5"}},
            {"key": "service.name", "value": {"stringValue": "web"}}]},
            "scopeLogs": [{"logRecords": [{"body": {"stringValue": "from otlp"}}]}]}]}
        request = urllib.request.Request(f"http://127.0.0.1:{self.otlp_port}/v1/logs", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        self.assertEqual(urllib.request.urlopen(request, timeout=10).status, 200)
        resource = self.wait_records(["from otlp"])["from otlp"]["resource"]
        self.assertEqual((resource["k8s.pod.name"], resource["k8s.deployment.name"]), ("web-7d9f-abc", "web"))
        self.assertEqual(resource["service.name"], "web")
        #  A sender that says nothing of its pod is found by the address it
        #  connects from (here 127.0.0.1: a pod of that IP).
        self.api.put("pods", pod("sender", "n1", "apps", ip="127.0.0.1", owner=("DaemonSet", "shipper")))
        wait_until(lambda: (self.details() or {}).get("pods") == 4, 20, "the sending pod cached")
        body["resourceLogs"][0]["resource"]["attributes"] = [{"key": "service.name", "value": {"stringValue": "s"}}]
        body["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["body"]["stringValue"] = "by connection"
        request = urllib.request.Request(f"http://127.0.0.1:{self.otlp_port}/v1/logs", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        self.assertEqual(urllib.request.urlopen(request, timeout=10).status, 200)
        resource = self.wait_records(["by connection"])["by connection"]["resource"]
        self.assertEqual((resource["k8s.pod.name"], resource["k8s.daemonset.name"]), ("sender", "shipper"))
        self.assertEqual(resource["client.address"], "127.0.0.1")
        #  The same over OTLP/gRPC, from gRPC's own client.
        if grpc_otlp.WHY_NOT:
            self.skipTest(grpc_otlp.WHY_NOT)
        import grpc
        channel = grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}")
        self.addCleanup(channel.close)
        grpc_otlp.export(channel, "logs", grpc_otlp.log_request("via-grpc"))
        resource = self.wait_records(["via-grpc-0"])["via-grpc-0"]["resource"]
        self.assertEqual((resource["k8s.pod.name"], resource["client.address"]), ("sender", "127.0.0.1"))


if __name__ == "__main__":
    unittest.main()
