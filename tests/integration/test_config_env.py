"""${env:NAME} and ${env:NAME:-default} in every string of the config file
(issue 49, docs/operations.md "The config file's environment"): the admin
address, a receiver's endpoint, an exporter's endpoint and a resource
attribute come from droverd's environment, a default stands in for what is
not set, $${ is a literal ${, a secret header keeps its reference in the
spec (the instance resolves it: the backend gets the value, GET shows the
reference), a spec PUT over the API is not expanded, and a variable not set
refuses the file with its line (droverd --check and the start alike)."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from capture import Capture
from harness import DROVERD, Admin, Engine, EngineTest, curl_post, free_port, wait_until

CONFIG = """engine:
  run_dir: {RUN}
  admin: { http: "127.0.0.1:${env:ADMIN_PORT}" }
  heartbeat_interval_ms: 100
groups:
  default:
    pipelines:
      env:
        nodes:
          in: {type: receiver:http, config: {endpoint: "${env:IN_HOST:-127.0.0.1}:${env:IN_PORT}"}, to: [t]}
          t:
            type: processor:transform
            config:
              set:
                'resource["k8s.node.name"]': '${env:NODE_NAME}'
                cluster: '${env:CLUSTER_NAME:-kind-local}'
                literal: '$${env:NODE_NAME}'
            to: [out]
          out:
            type: exporter:otlp
            config:
              endpoint: "${env:OTLP_ENDPOINT}"
              encoding: json
              batch: {max_delay_ms: 20}
              headers: {Authorization: "${env:SHIPPING_TOKEN}"}
"""


def records(bodies):
    found = []
    for body in bodies:
        for rl in json.loads(body).get("resourceLogs", []):
            resource = {a["key"]: a["value"].get("stringValue") for a in rl.get("resource", {}).get("attributes", [])}
            for sl in rl.get("scopeLogs", []):
                for lr in sl.get("logRecords", []):
                    attrs = {a["key"]: a["value"].get("stringValue") for a in lr.get("attributes", [])}
                    found.append((resource, attrs))
    return found


class ConfigEnv(EngineTest):
    def setUp(self):
        self.capture = Capture()
        self.addCleanup(self.capture.close)
        self.admin_port, self.in_port = free_port(), free_port()
        self.env = {"ADMIN_PORT": str(self.admin_port), "IN_PORT": str(self.in_port), "NODE_NAME": "node-7",
                    "OTLP_ENDPOINT": self.capture.url(), "SHIPPING_TOKEN": "Bearer s3cret"}
        for name in ("IN_HOST", "CLUSTER_NAME"):
            os.environ.pop(name, None)

    def test_strings_come_from_the_environment_and_secrets_stay_references(self):
        engine = self.start_engine(CONFIG, env=self.env)
        admin = Admin(engine, self.admin_port)
        admin.wait_ready(20)
        status, _, _, _ = curl_post(self.in_port, "/", b'{"body": "hello"}\n', "application/x-ndjson")
        self.assertEqual(status, 200)
        got = wait_until(lambda: records(self.capture.bodies()), 20, "the record at the backend")
        resource, attrs = got[0]
        self.assertEqual(resource.get("k8s.node.name"), "node-7")
        self.assertEqual(attrs.get("cluster"), "kind-local", "the default stands in for a variable not set")
        self.assertEqual(attrs.get("literal"), "${env:NODE_NAME}", "$${ is a literal ${")
        with self.capture.lock:
            self.assertEqual(self.capture.accepted[0].headers.get("Authorization"), "Bearer s3cret")
        spec = admin.http("GET", "/api/v1/groups/default/pipelines/env")[1]["spec"]
        self.assertEqual(spec["nodes"]["in"]["config"]["endpoint"], f"127.0.0.1:{self.in_port}")
        self.assertEqual(spec["nodes"]["out"]["config"]["endpoint"], self.capture.url())
        self.assertEqual(spec["nodes"]["out"]["config"]["headers"]["Authorization"], "${env:SHIPPING_TOKEN}",
                         "a secret's reference stays in the spec")
        #  A spec over the API is the operator's text: not expanded.
        body = {"pipeline": {"nodes": {"in": {"type": "receiver:generator", "config": {"count": 1}, "to": ["t"]},
                                       "t": {"type": "processor:transform",
                                             "config": {"set": {"who": "${env:NODE_NAME}"}}, "to": ["out"]},
                                       "out": {"type": "exporter:null"}}}}
        status, answer, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/api", body=body, timeout=30)
        self.assertEqual(status, 200, answer)
        spec = admin.http("GET", "/api/v1/groups/default/pipelines/api")[1]["spec"]
        self.assertEqual(spec["nodes"]["t"]["config"]["set"]["who"], "${env:NODE_NAME}")

    def check(self, text, env):
        folder = tempfile.mkdtemp(prefix="drv-env-")
        self.addCleanup(shutil.rmtree, folder, True)
        path = os.path.join(folder, "drover.yaml")
        with open(path, "w") as f:
            f.write(text.replace("{RUN}", os.path.join(os.path.dirname(path), "run")))
        full = {k: v for k, v in os.environ.items() if k not in self.env}
        full.update(env)
        return subprocess.run([DROVERD, "--check", "-c", path], capture_output=True, text=True, env=full, timeout=30)

    def test_a_variable_not_set_refuses_the_file_with_its_line(self):
        self.assertEqual(self.check(CONFIG, self.env).returncode, 0)
        env = dict(self.env)
        del env["NODE_NAME"]
        out = self.check(CONFIG, env)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("drover.yaml:15: groups.default.pipelines.env.nodes.t.config.set.resource[\"k8s.node.name\"]: "
                      "${env:NODE_NAME}: NODE_NAME is not set", out.stderr)
        out = self.check(CONFIG.replace("${env:OTLP_ENDPOINT}", "${env:OTLP-ENDPOINT}"), self.env)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(":22: groups.default.pipelines.env.nodes.out.config.endpoint: ${env:OTLP-ENDPOINT}", out.stderr)
        #  The secret need not be set to check: the instance resolves it.
        env = dict(self.env)
        del env["SHIPPING_TOKEN"]
        self.assertEqual(self.check(CONFIG, env).returncode, 0, "a secret's variable is the instance's to read")
        #  droverd itself refuses to start on it, naming it.
        env = dict(self.env)
        del env["NODE_NAME"]
        engine = Engine(CONFIG)
        self.addCleanup(shutil.rmtree, engine.dir, True)
        try:
            engine.start(env=env)
        except AssertionError:
            pass  # it exited before the harness saw it start: the same
        self.assertEqual(engine.proc.wait(timeout=30), 100)
        self.assertIn("NODE_NAME is not set in droverd's environment", engine.log_text())


if __name__ == "__main__":
    unittest.main()
