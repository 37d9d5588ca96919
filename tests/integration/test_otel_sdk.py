"""The OpenTelemetry JS SDK (a client nobody here wrote; pinned in
tests/otel-js with its lock file, installed here by npm ci) sends logs,
spans and metrics to receiver:otlp over OTLP/HTTP in both encodings,
protobuf and JSON, and over OTLP/gRPC; every attribute, id and timestamp
arrives as docs/operations.md maps them. A @grpc/grpc-js server loading
drover's OTLP definitions receives what exporter:otlp sends over gRPC,
equal to what came in, and its refusals are retried."""

import base64
import filecmp
import glob
import threading
import json
import os
import shutil
import subprocess
import unittest

from harness import BIN, Admin, EngineTest, curl_post, engine_yaml, free_port, read_ndjson, wait_until
import grpc_otlp
from grpc_otlp import PROTO, WHY_NOT
from test_otlp_grpc import encoded
from test_otlp_grpc_exporter import spans

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "../otel-js")
CLIENT = os.path.abspath(os.path.join(BIN, "../otel-js"))  # in the build tree


def install_client():
    """npm ci into the build tree, once per lock file. Returns None, or why it could not."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "no node or npm (scripts/install-deps.sh installs them)"
    os.makedirs(CLIENT, exist_ok=True)
    fresh = os.path.exists(os.path.join(CLIENT, "node_modules")) and filecmp.cmp(
        os.path.join(SOURCE, "package-lock.json"), os.path.join(CLIENT, "package-lock.json"), shallow=False)
    for name in os.listdir(SOURCE):
        if name.endswith(".js") or name.startswith("package"):
            shutil.copy(os.path.join(SOURCE, name), CLIENT)
    if fresh:
        return None
    out = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=CLIENT,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return "npm ci failed (no npm registry?): " + (out.stderr.strip().splitlines() or ["?"])[-1]
    return None


class JsClients:
    """A test class driving clients from tests/otel-js: installed once, the
    class skipped without node, npm or the npm registry."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        why = install_client()
        if why:
            raise unittest.SkipTest(why)


class OtelSdk(JsClients, EngineTest):

    def setUp(self):
        self.start_admin_engine()
        self.out = self.engine.out_dir
        self.port, self.grpc_port = free_port(), free_port()
        spec = {"pipeline": {"cores": {"count": 2}, "nodes": {
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}",
                                                       "grpc_endpoint": f"127.0.0.1:{self.grpc_port}"}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.out}/sdk-{{core}}.ndjson"}}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/sdk", body=spec)
        self.assertEqual(status, 200, body)

    def base(self, encoding):
        return f"http://127.0.0.1:{self.grpc_port if encoding == 'grpc' else self.port}"

    def send(self, encoding, run):
        out = subprocess.run(["node", os.path.join(CLIENT, "send.js"), self.base(encoding), encoding, run],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def records(self, n):
        def rows():
            found = []
            for path in glob.glob(f"{self.out}/sdk-*.ndjson"):
                found += read_ndjson(path)
            return found if len(found) >= n else None
        return wait_until(rows, 15, f"{n} records")

    def check(self, encoding):
        run = f"run-{encoding}"
        sent = self.send(encoding, run)
        rows = self.records(7)
        self.assertEqual(len(rows), 7)
        resource = {"service.name": f"drover-test-{run}", "deployment.count": 3}
        spans = {r["name"]: r for r in rows if r["signal"] == "span"}
        parent, child = spans[f"parent-{run}"], spans[f"child-{run}"]
        ids = {s["name"]: s for s in sent["spans"]}
        self.assertEqual((parent["trace_id"], parent["span_id"], parent["parent_span_id"]),
                         (ids[parent["name"]]["trace_id"], ids[parent["name"]]["span_id"], ""))
        self.assertEqual((child["trace_id"], child["parent_span_id"]), (parent["trace_id"], parent["span_id"]))
        self.assertEqual(child["span_id"], ids[child["name"]]["span_id"])
        self.assertEqual((parent["kind"], parent["start_time_unix_nano"], parent["end_time_unix_nano"]),
                         (2, 1700000000123456789, 1700000001000000000))
        self.assertEqual(parent["attributes"], {"http.method": "POST", "retries": 2, "ok": True, "ratio": 0.25,
                                                "tags": ["a", "b"]})
        self.assertEqual((child["kind"], child["start_time_unix_nano"], child["end_time_unix_nano"]),
                         (3, 1700000000223456789, 1700000000423456789))
        self.assertEqual(child["events"], [{"time_unix_nano": 1700000000323456789, "name": "retrying",
                                            "attributes": {"attempt": 1}}])
        self.assertEqual(child["links"], [{"trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7ad6b7169203331",
                                           "attributes": {"link.kind": "follows"}}])
        self.assertEqual(child["status"], {"code": 2, "message": "upstream said no"})
        for span in (parent, child):
            self.assertEqual(span["resource"], resource)
            self.assertEqual((span["scope"]["name"], span["scope"]["version"]), ("drover-test-tracer", "1.2.3"))
        logs = sorted((r for r in rows if r["signal"] == "log"), key=lambda r: r["attributes"]["seq"])
        self.assertEqual([r["attributes"]["seq"] for r in logs], [0, 1, 2, 3, 4])
        for i, log in enumerate(logs):
            self.assertEqual((log["time_unix_nano"], log["observed_time_unix_nano"]),
                             (1700000002000000000 + i * 1000 + 7, 1700000003000000000 + i))
            self.assertEqual((log["severity_number"], log["severity_text"], log["body"]), (13, "WARN", f"log {i} of {run}"))
            self.assertEqual(log["attributes"], {"seq": i, "user.name": "zoë", "big": 9007199254740991, "flag": False,
                                                 "nested.list": [1, 2, 3]})
            self.assertEqual((log["trace_id"], log["span_id"], log["flags"]), (parent["trace_id"], parent["span_id"], 1))
            self.assertEqual(log["resource"], resource)
            self.assertEqual((log["scope"]["name"], log["scope"]["version"]), ("drover-test-logger", "4.5.6"))
        print(f"OpenTelemetry JS SDK over OTLP/{encoding}: 2 spans and 5 logs arrived whole", flush=True)

    def check_metrics(self, encoding):
        """A counter, an up-down counter, a histogram, an exponential histogram
        and an observable gauge from the SDK's MeterProvider: every point
        arrives as its record (the SDK exports at the flush and again at the
        shutdown: both copies are the same points)."""
        run = f"metrics-{encoding}"
        out = subprocess.run(["node", os.path.join(CLIENT, "send_metrics.js"), self.base(encoding),
                              encoding, run], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        points = {}
        for r in self.records(12):
            if r["signal"] == "metric" and r["resource"] == {"service.name": f"drover-metrics-{run}"}:
                points[(r["name"], json.dumps(r["attributes"], sort_keys=True))] = r
        self.assertEqual(len(points), 6, sorted(points))
        for r in points.values():
            self.assertEqual((r["scope"]["name"], r["scope"]["version"]), ("drover-test-meter", "7.8.9"))
            self.assertGreater(r["time_unix_nano"], 1700000000000000000)
        a, b = points[("requests", '{"route": "/a"}')], points[("requests", '{"route": "/b"}')]
        self.assertEqual((a["type"], a["is_monotonic"], a["aggregation_temporality"], a["unit"], a["description"],
                          a["value"], b["value"]), ("sum", True, 2, "{request}", "requests served", 7, 1))
        queue = points[("queue.depth", "{}")]
        self.assertEqual((queue["type"], queue["is_monotonic"], queue["value"], queue["unit"]),
                         ("sum", False, 7, "{item}"))
        latency = points[("latency", '{"route": "/a"}')]
        self.assertEqual((latency["type"], latency["count"], latency["sum"], latency["min"], latency["max"]),
                         ("histogram", 3, 56, 1, 50))
        self.assertEqual(len(latency["bucket_counts"]), len(latency["explicit_bounds"]) + 1)
        self.assertEqual(sum(latency["bucket_counts"]), 3)
        sizes = points[("sizes", "{}")]
        self.assertEqual((sizes["type"], sizes["count"], sizes["sum"], sizes["min"], sizes["max"]),
                         ("exponential_histogram", 3, 3303, 3, 3000))
        self.assertEqual(sum(sizes["positive"]["bucket_counts"]) + sizes["zero_count"], 3)
        gauge = points[("temperature", '{"room": "a"}')]
        self.assertEqual((gauge["type"], gauge["value"], gauge["unit"]), ("gauge", 21.5, "Cel"))
        print(f"OpenTelemetry JS SDK metrics over OTLP/{encoding}: every instrument's points arrived", flush=True)

    def test_protobuf(self):
        self.check("proto")

    def test_metrics_protobuf(self):
        self.check_metrics("proto")

    def test_metrics_json(self):
        self.check_metrics("json")

    def test_json(self):
        self.check("json")

    def test_grpc(self):
        self.check("grpc")

    def test_metrics_grpc(self):
        self.check_metrics("grpc")


class GrpcJsServer(EngineTest):
    """exporter:otlp with protocol: grpc, received by @grpc/grpc-js."""

    @classmethod
    def setUpClass(cls):
        why = install_client() or WHY_NOT
        if why:
            raise unittest.SkipTest(why)

    def serve(self, *script):
        server = subprocess.Popen(["node", os.path.join(CLIENT, "grpc_server.js"), PROTO, *script],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (server.stdin.close(), server.wait(10), server.stdout.close()))
        lines = []
        threading.Thread(target=lambda: lines.extend(json.loads(line) for line in server.stdout), daemon=True).start()
        port = wait_until(lambda: next((m["port"] for m in list(lines) if "port" in m), None), 15, "the server's port")
        return port, lines

    def put(self, grpc_port):
        self.start_admin_engine()
        self.port = free_port()
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["out"]},
            "out": {"type": "exporter:otlp", "config": {"endpoint": f"127.0.0.1:{grpc_port}", "protocol": "grpc",
                                                        "batch": {"max_delay_ms": 20},
                                                        "retry": {"initial_ms": 50, "max_ms": 200}}}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/out", body=spec)
        self.assertEqual(status, 200, body)

    def test_what_exporter_otlp_sends_over_grpc_decodes_equal_to_what_came_in(self):
        port, lines = self.serve()
        self.put(port)
        sent = {"logs": encoded("logs"), "metrics": encoded("metrics"), "traces": spans().SerializeToString()}
        for signal, data in sent.items():
            self.assertEqual(curl_post(self.port, f"/v1/{signal}", data, "application/x-protobuf")[0], 200)
        got = wait_until(lambda: (lambda r: r if len(r) == 3 else None)(
            {m["signal"]: m["request"] for m in list(lines) if "signal" in m}), 15, "three requests")
        for signal, data in sent.items():
            cls = grpc_otlp.request_class(signal)
            self.assertEqual(cls.FromString(base64.b64decode(got[signal])), cls.FromString(data), signal)

    def test_unavailable_and_resource_exhausted_with_retry_info_are_retried(self):
        port, lines = self.serve("UNAVAILABLE", "RESOURCE_EXHAUSTED:300")
        self.put(port)
        self.assertEqual(curl_post(self.port, "/v1/logs", encoded("logs"), "application/x-protobuf")[0], 200)
        wait_until(lambda: any("signal" in m for m in list(lines)), 15, "the batch delivered at last")
        self.assertEqual([m.get("refused", "OK") for m in lines if "port" not in m],
                         ["UNAVAILABLE", "RESOURCE_EXHAUSTED", "OK"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
