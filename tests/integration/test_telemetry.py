"""droverd's own telemetry pushed as OTLP (engine.telemetry.otlp;
docs/operations.md, "Its own telemetry"; issue 54), received by another
droverd's receiver:otlp, over HTTP and gRPC: the series of /metrics as
cumulative sums, gauges and histograms, and droverd's log lines, under the
resource service.name drover; bounded while the collector is down, the
queued lines sent once it is back; the admin API answering throughout;
engine.telemetry's mistakes named."""

import os
import shutil
import socket
import subprocess
import time
import unittest

from harness import BIN, SLOW, Admin, Engine, EngineTest, engine_yaml, free_port, read_ndjson, wait_until

PIPE = "/api/v1/groups/default/pipelines"


def collector(test, http_port, grpc_port):
    """A droverd that takes OTLP on http_port and grpc_port into a file: (engine, path)."""
    admin_port = free_port()
    config = engine_yaml(f"""
      otlp:
        cores: {{count: 1}}
        nodes:
          in: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{http_port}", grpc_endpoint: "127.0.0.1:{grpc_port}"}},
               to: [out]}}
          out: {{type: "exporter:file", config: {{path: "{{OUT}}/otlp.ndjson"}}}}
""").replace("HTTP", str(admin_port))
    engine = Engine(config, name="collector").start()
    test.addCleanup(shutil.rmtree, engine.dir, True)
    test.addCleanup(engine.stop)
    Admin(engine, admin_port).wait_ready(20)
    return engine, os.path.join(engine.out_dir, "otlp.ndjson")


class Telemetry(EngineTest):
    def start_pushing(self, endpoint, protocol="http", extra=""):
        self.start_admin_engine(engine_extra=f"  telemetry: {{otlp: {{endpoint: \"{endpoint}\", protocol: {protocol}, "
                                             f"interval_secs: 1{extra}}}}}\n")

    def put(self, name):
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "g": {"type": "receiver:generator", "config": {"rate": 100}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        status, body, _ = self.admin.http("PUT", f"{PIPE}/{name}", body=spec, timeout=30)
        self.assertEqual(status, 200, body)

    def check_received(self, path):
        def got():
            records = read_ndjson(path)
            metrics = {r["name"]: r for r in records if r.get("signal") == "metric"
                       and r.get("attributes", {}).get("pipeline") == "gen"}
            logs = [r for r in records if r.get("signal") == "log"]
            return (metrics, logs) if "drover_pipeline_records_in_total" in metrics and any(
                "rollout succeeded pipeline=default:gen" in r["body"] for r in logs) else None
        metrics, logs = wait_until(got, 15 * SLOW, "droverd's metrics and log lines in the collector")
        records_in = metrics["drover_pipeline_records_in_total"]
        self.assertEqual((records_in["type"], records_in["is_monotonic"], records_in["aggregation_temporality"]),
                         ("sum", True, 2))
        self.assertGreater(records_in["start_time_unix_nano"], 0)
        self.assertEqual(metrics["drover_pipeline_generation"]["type"], "gauge")
        resource = records_in["resource"]
        self.assertEqual(resource["service.name"], "drover")
        self.assertTrue(resource["service.instance.id"] and resource["service.version"] and resource["host.name"])
        self.assertEqual(records_in["scope"]["name"], "droverd")
        histograms = [r for r in read_ndjson(path) if r.get("name") == "drover_rollout_duration_seconds"]
        self.assertTrue(histograms and histograms[-1]["type"] == "histogram", histograms[-1:])
        self.assertEqual(sum(histograms[-1]["bucket_counts"]), histograms[-1]["count"])
        line = next(r for r in logs if "rollout succeeded pipeline=default:gen" in r["body"])
        self.assertEqual((line["severity_text"], line["severity_number"], line["resource"]["service.name"]),
                         ("INFO", 9, "drover"))

    def test_metrics_and_log_lines_over_http(self):
        http, grpc = free_port(), free_port()
        _, path = collector(self, http, grpc)
        self.start_pushing(f"http://127.0.0.1:{http}")
        self.put("gen")
        self.check_received(path)
        _, text, _ = self.admin.http("GET", "/metrics")
        self.assertRegex(text, r'drover_telemetry_sent_requests_total\{signal="logs"\} [1-9]')

    def test_metrics_and_log_lines_over_grpc(self):
        http, grpc = free_port(), free_port()
        _, path = collector(self, http, grpc)
        self.start_pushing(f"http://127.0.0.1:{grpc}", "grpc")
        self.put("gen")
        self.check_received(path)

    def test_the_requests_decode_with_the_protobuf_classes_of_the_otlp_protos(self):
        # A decoder nobody here wrote: python3-protobuf's classes of the OTLP protos.
        from capture import Capture
        from grpc_otlp import WHY_NOT, request_class
        if WHY_NOT:
            self.skipTest(WHY_NOT)
        capture = Capture()
        self.addCleanup(capture.close)
        self.start_pushing(capture.url(""))
        self.put("gen")

        def decoded():
            with capture.lock:
                requests = [(r.path, r.headers.get("Content-Type"), r.body) for r in capture.accepted]
            metrics = [request_class("metrics").FromString(b) for p, _, b in requests if p == "/v1/metrics"]
            logs = [request_class("logs").FromString(b) for p, _, b in requests if p == "/v1/logs"]
            types = {p: t for p, t, _ in requests}
            return (metrics, logs, types) if metrics and logs else None
        metrics, logs, types = wait_until(decoded, 15 * SLOW, "a metrics and a logs request")
        self.assertEqual(types, {"/v1/metrics": "application/x-protobuf", "/v1/logs": "application/x-protobuf"})
        names = {m.name: m for r in metrics for rm in r.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
        self.assertTrue(names["drover_instance_records_in_total"].sum.is_monotonic)
        self.assertEqual(names["drover_build_info"].WhichOneof("data"), "gauge")
        histogram = names["drover_rollout_duration_seconds"].histogram.data_points[0]
        self.assertEqual(len(histogram.bucket_counts), len(histogram.explicit_bounds) + 1)
        resource = {a.key: a.value.string_value for a in metrics[0].resource_metrics[0].resource.attributes}
        self.assertEqual(resource["service.name"], "drover")
        bodies = [lr.body.string_value for r in logs for rl in r.resource_logs for sl in rl.scope_logs
                  for lr in sl.log_records]
        self.assertTrue(any(b.startswith("telemetry pushed endpoint=") for b in bodies), bodies[:5])

    def test_a_collector_down_costs_a_bounded_queue_and_blocks_nothing(self):
        # First a collector that takes the connection and never answers (a
        # listening socket nobody accepts from), then one that is not there,
        # then one that works.
        http, grpc = free_port(), free_port()
        hanging = socket.socket()
        hanging.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hanging.bind(("127.0.0.1", http))
        hanging.listen(16)
        self.start_pushing(f"http://127.0.0.1:{http}", extra=", max_queued_logs: 10")
        for i in range(4):
            self.put(f"p{i}")  # a dozen log lines and more

        def metric(name):
            found = [line for line in self.admin.http("GET", "/metrics")[1].splitlines() if line.startswith(name + " ")]
            return int(found[0].split()[1]) if found else 0
        wait_until(lambda: metric("drover_telemetry_dropped_log_records_total") > 0, 15 * SLOW,
                   "the oldest lines dropped while a request hangs")
        started = time.monotonic()
        for _ in range(20):
            self.assertEqual(self.admin.http("GET", "/status")[0], 200)
        self.assertLess(time.monotonic() - started, 10 * SLOW, "the admin API answers while a request hangs")
        hanging.close()
        wait_until(lambda: metric("drover_telemetry_failed_requests_total") > 0, 15 * SLOW, "requests refused")
        # The collector comes back: the lines queued while it was away (the
        # newest ten) arrive.
        _, path = collector(self, http, grpc)
        wait_until(lambda: any("rollout succeeded pipeline=default:p3" in r.get("body", "")
                               for r in read_ndjson(path) if r.get("signal") == "log"), 60 * SLOW,
                   "a line queued while the collector was away")

    def test_mistakes_are_named(self):
        config = os.path.join(self.id().replace(".", "_") + ".yaml")
        cases = {
            "telemetry: {otlp: {endpoint: \"tcp://x:1\"}}": "engine.telemetry.otlp.endpoint: must be the collector's",
            "telemetry: {otlp: {endpoint: \"http://x:1\", protocol: udp}}": "engine.telemetry.otlp.protocol: must be http or grpc",
            "telemetry: {otlp: {endpoint: \"http://x:1\", interval_secs: 0}}": "engine.telemetry.otlp.interval_secs",
            "telemetry: {otlp: {endpoint: \"http://x:1\", color: red}}": "engine.telemetry.otlp.color: unknown key",
            "telemetry: {otel: {}}": "engine.telemetry",
        }
        try:
            for text, expected in cases.items():
                with open(config, "w") as f:
                    f.write(f"engine:\n  run_dir: /tmp/drover-check\n  {text}\n")
                check = subprocess.run([f"{BIN}/droverd", "--check", "-c", config], capture_output=True, text=True)
                self.assertNotEqual(check.returncode, 0, text)
                self.assertIn(expected, check.stderr, text)
        finally:
            os.unlink(config)


if __name__ == "__main__":
    unittest.main()
