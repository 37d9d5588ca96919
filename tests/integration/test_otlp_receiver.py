"""receiver:otlp through the real binaries: curl posts the OTLP/JSON
examples of the specification, protoc (protobuf-compiler) encodes
requests from text against our definitions, and every attribute, id and
timestamp arrives as docs/operations.md maps it; the answers are the
Export…ServiceResponse in the request's encoding (protoc decodes the
protobuf ones); bad requests get 400/413/415 and export nothing."""

import glob
import gzip
import json
import os
import subprocess
import time
import unittest

from harness import Admin, EngineTest, curl_post, engine_yaml, free_port, read_ndjson, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "../../proto")
LOGS_REQ = "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest"
LOGS_RESP = "opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse"
TRACES_REQ = "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"
STATUS = "google.rpc.Status"
STATUS_FILE = "google/rpc/status.proto"
LOGS_FILE = "opentelemetry/proto/collector/logs/v1/logs_service.proto"
TRACES_FILE = "opentelemetry/proto/collector/trace/v1/trace_service.proto"
METRICS_REQ = "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"
METRICS_RESP = "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse"
METRICS_FILE = "opentelemetry/proto/collector/metrics/v1/metrics_service.proto"
HAVE_TOOLS = all(subprocess.run(["which", t], capture_output=True).returncode == 0 for t in ("curl", "protoc"))


def protoc(mode, message, proto_file, data):
    return subprocess.run(["protoc", f"--proto_path={PROTO}", f"--{mode}={message}", proto_file],
                          input=data, capture_output=True, check=True).stdout


def curl(port, path, data, ctype, *extra):
    return curl_post(port, path, data, ctype, *extra)[:3]


@unittest.skipUnless(HAVE_TOOLS, "needs curl and protoc")
class OtlpReceiver(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.out = self.engine.out_dir
        self.port = free_port()

    def put(self, **config):
        config = {"endpoint": f"127.0.0.1:{self.port}", **config}
        spec = {"pipeline": {"nodes": {
            "in": {"type": "receiver:otlp", "config": config, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.out}/otlp-{{core}}-{{generation}}.ndjson"}}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/otel", body=spec)
        self.assertEqual(status, 200, body)

    def records(self, n):
        def rows():
            found = []
            for path in sorted(glob.glob(f"{self.out}/otlp-*.ndjson")):
                found += read_ndjson(path)
            return found if len(found) >= n else None
        return wait_until(rows, 10, f"{n} records")

    def test_the_specifications_json_examples_arrive_whole(self):
        self.put()
        with open(os.path.join(HERE, "otlp/logs.json"), "rb") as f:
            status, body, ctype = curl(self.port, "/v1/logs", f.read(), "application/json")
        self.assertEqual((status, json.loads(body), ctype), (200, {}, "application/json"))
        with open(os.path.join(HERE, "otlp/traces.json"), "rb") as f:
            status, body, _ = curl(self.port, "/v1/traces", gzip.compress(f.read()), "application/json",
                                   "-H", "Content-Encoding: gzip")
        self.assertEqual((status, json.loads(body)), (200, {}))
        rows = {r["signal"]: r for r in self.records(2)}
        log = rows["log"]
        self.assertEqual((log["time_unix_nano"], log["observed_time_unix_nano"]), (1544712660300000000,) * 2)
        self.assertEqual((log["severity_number"], log["severity_text"], log["body"]), (10, "Information", "Example log record"))
        self.assertEqual((log["trace_id"], log["span_id"], log["flags"]), ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", 0))
        self.assertEqual(log["attributes"], {
            "string.attribute": "some string", "boolean.attribute": True, "int.attribute": 10,
            "double.attribute": 637.704, "array.attribute": ["many", "values"],
            "map.attribute": {"some.map.key": "some value"},
            "bytes.attribute": log["attributes"]["bytes.attribute"]})
        self.assertEqual(log["resource"], {"service.name": "my.service"})
        self.assertEqual(log["scope"], {"name": "my.library", "version": "1.0.0",
                                        "attributes": {"my.scope.attribute": "some scope attribute"}})
        span = rows["span"]
        self.assertEqual((span["trace_id"], span["span_id"], span["parent_span_id"]),
                         ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", "eee19b7ec3c1b173"))
        self.assertEqual((span["name"], span["kind"], span["start_time_unix_nano"], span["end_time_unix_nano"]),
                         ("I'm a server span", 2, 1544712660000000000, 1544712661000000000))
        self.assertEqual(span["events"], [{"time_unix_nano": 1544712660500000000, "name": "ev", "attributes": {}}])
        self.assertEqual(span["links"], [{"trace_id": "5b8efff798038103d269b633813fc60d", "span_id": "eee19b7ec3c1b175",
                                          "attributes": {}}])
        self.assertEqual(span["status"], {"code": 2, "message": "boom"})
        self.assertEqual(span["attributes"], {"my.span.attr": "some value"})

    def test_a_log_record_that_does_not_say_when_it_was_observed_gets_when_it_was_taken(self):
        """Every receiver sets observed_time_unix_nano as it takes a record;
        a sender's own is kept (the fixtures above)."""
        self.put()
        body = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {"timeUnixNano": "1", "body": {"stringValue": "unobserved"}},
            {"timeUnixNano": "1", "observedTimeUnixNano": "42", "body": {"stringValue": "observed"}}]}]}]}
        before = time.time_ns()
        status, _, _ = curl(self.port, "/v1/logs", json.dumps(body).encode(), "application/json")
        after = time.time_ns()
        self.assertEqual(status, 200)
        rows = {r["body"]: r for r in self.records(2)}
        self.assertTrue(before <= rows["unobserved"]["observed_time_unix_nano"] <= after, rows["unobserved"])
        self.assertEqual(rows["observed"]["observed_time_unix_nano"], 42)

    def test_protobuf_requests_encoded_by_protoc(self):
        self.put(signals=["logs"])
        with open(os.path.join(HERE, "otlp/logs.txt"), "rb") as f:
            request = protoc("encode", LOGS_REQ, LOGS_FILE, f.read())
        status, body, ctype = curl(self.port, "/v1/logs", request, "application/x-protobuf")
        self.assertEqual((status, ctype), (200, "application/x-protobuf"))
        self.assertEqual(protoc("decode", LOGS_RESP, LOGS_FILE, body), b"")  # no partial_success
        log = self.records(1)[0]
        self.assertEqual((log["time_unix_nano"], log["severity_number"], log["body"]),
                         (1700000000123456789, 9, "hello protobuf"))
        self.assertEqual((log["trace_id"], log["span_id"]), ("0102030405060708090a0b0c0d0e0f10", "0102030405060708"))
        self.assertEqual((log["attributes"], log["resource"]), ({"k": -5}, {"service.name": "pb.service"}))
        # Traces are not among this receiver's signals.
        status, _, _ = curl(self.port, "/v1/traces", b"", "application/x-protobuf")
        self.assertEqual(status, 404)

    def check_metric_records(self, points):
        """The records of otlp/metrics.txt (or .json): one per data point, as docs/operations.md maps them."""
        self.assertEqual(len(points), 6)
        common = {"signal": "metric", "resource": {"service.name": "meters"},
                  "resource_schema_url": "https://opentelemetry.io/schemas/1.21.0",
                  "scope": {"name": "meter", "version": "1.2", "attributes": {}}}
        gauge = points[("queue.depth", 1700000000000000001)]
        self.assertLessEqual(common.items(), gauge.items())
        self.assertEqual({k: gauge[k] for k in ("type", "description", "unit", "value", "attributes", "metadata",
                                               "start_time_unix_nano", "flags")},
                         {"type": "gauge", "description": "items waiting", "unit": "{item}", "value": -7,
                          "attributes": {"queue": "a"}, "metadata": {"origin": "sdk"}, "start_time_unix_nano": 0,
                          "flags": 0})
        self.assertNotIn("aggregation_temporality", gauge)
        self.assertEqual(gauge["exemplars"], [{"time_unix_nano": 1700000000000000000, "value": 3,
                                               "span_id": "0102030405060708",
                                               "trace_id": "0102030405060708090a0b0c0d0e0f10",
                                               "filtered_attributes": {"user": "u1"}}])
        total = points[("requests", 1700000010000000000)]
        self.assertEqual((total["type"], total["aggregation_temporality"], total["is_monotonic"], total["value"],
                          total["flags"], total["start_time_unix_nano"]),
                         ("sum", 2, True, 12.5, 1, 1700000000000000000))
        hist = points[("latency", 1700000010000000000)]
        self.assertEqual({k: hist[k] for k in ("type", "aggregation_temporality", "count", "sum", "min", "max",
                                              "bucket_counts", "explicit_bounds")},
                         {"type": "histogram", "aggregation_temporality": 1, "count": 6, "sum": 31.5, "min": 0.5,
                          "max": 20.25, "bucket_counts": [1, 2, 3], "explicit_bounds": [1.0, 10.0]})
        self.assertEqual(hist["exemplars"][0]["value"], 9.75)
        empty = points[("latency", 1700000020000000000)]
        self.assertEqual(empty["count"], 0)
        for absent in ("sum", "min", "max"):  # not sent: no key (an OTLP round trip stays exact)
            self.assertNotIn(absent, empty)
        size = points[("size", 1700000010000000000)]
        self.assertEqual({k: size[k] for k in ("type", "count", "sum", "scale", "zero_count", "zero_threshold",
                                              "positive", "negative", "min", "max")},
                         {"type": "exponential_histogram", "count": 5, "sum": 1000.5, "scale": -3, "zero_count": 1,
                          "zero_threshold": 0.001, "positive": {"offset": -2, "bucket_counts": [1, 3]},
                          "negative": {"offset": 4, "bucket_counts": [0]}, "min": 0.0, "max": 900.0})
        summary = points[("duration", 1700000010000000000)]
        self.assertEqual((summary["type"], summary["count"], summary["sum"], summary["quantile_values"]),
                         ("summary", 10, 4.5, [{"quantile": 0.5, "value": 0.4}, {"quantile": 0.99, "value": 1.5}]))

    def test_metrics_every_type_one_record_per_data_point(self):
        self.put(signals=["metrics", "logs"])
        with open(os.path.join(HERE, "otlp/metrics.txt"), "rb") as f:
            request = protoc("encode", METRICS_REQ, METRICS_FILE, f.read())
        status, body, ctype = curl(self.port, "/v1/metrics", request, "application/x-protobuf")
        self.assertEqual((status, ctype), (200, "application/x-protobuf"), body)
        self.assertEqual(protoc("decode", METRICS_RESP, METRICS_FILE, body), b"")  # no partial_success
        records = self.records(6)
        self.check_metric_records({(r["name"], r["time_unix_nano"]): r for r in records})
        # The same request in OTLP/JSON makes the same records.
        with open(os.path.join(HERE, "otlp/metrics.json"), "rb") as f:
            status, body, ctype = curl(self.port, "/v1/metrics", f.read(), "application/json")
        self.assertEqual((status, ctype, json.loads(body)), (200, "application/json", {}))
        again = self.records(12)[6:]
        self.check_metric_records({(r["name"], r["time_unix_nano"]): r for r in again})
        self.assertEqual(sorted(map(json.dumps, records)), sorted(map(json.dumps, again)))
        # A duplicate key refuses that data point, and says so.
        text = b"""resource_metrics { scope_metrics { metrics { name: "m" gauge {
          data_points { as_int: 1 }
          data_points { as_int: 2 attributes { key: "a" } attributes { key: "a" } } } } } }"""
        status, body, _ = curl(self.port, "/v1/metrics", protoc("encode", METRICS_REQ, METRICS_FILE, text),
                               "application/x-protobuf")
        self.assertEqual(status, 200)
        self.assertIn("rejected_data_points: 1", protoc("decode", METRICS_RESP, METRICS_FILE, body).decode())
        self.records(13)
        # A malformed JSON one says where.
        bad = {"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"name": "m", "histogram": {
            "dataPoints": [{"bucketCounts": ["x"]}]}}]}]}]}
        status, body, _ = curl(self.port, "/v1/metrics", json.dumps(bad).encode(), "application/json")
        self.assertEqual(status, 400)
        self.assertIn("resourceMetrics[0].scopeMetrics[0].metrics[0].histogram.dataPoints[0]",
                      json.loads(body)["message"])
        self.assertIn("rejectedDataPoints", curl(self.port, "/v1/metrics", json.dumps(
            {"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"name": "m", "gauge": {"dataPoints": [
                {"asInt": 1, "attributes": [{"key": "a"}, {"key": "a"}]}]}}]}]}]}).encode(),
            "application/json")[1].decode())
        # A receiver without metrics among its signals does not serve them.
        self.put(signals=["logs"])
        status, _, _ = curl(self.port, "/v1/metrics", request, "application/x-protobuf")
        self.assertEqual(status, 404)

    def test_a_duplicate_key_refuses_that_record_and_says_so_in_partial_success(self):
        self.put()
        text = b"""resource_logs { scope_logs {
          log_records { body { string_value: "kept" } }
          log_records { body { string_value: "refused" } attributes { key: "a" } attributes { key: "a" } }
        } }"""
        status, body, _ = curl(self.port, "/v1/logs", protoc("encode", LOGS_REQ, LOGS_FILE, text),
                               "application/x-protobuf")
        self.assertEqual(status, 200)
        decoded = protoc("decode", LOGS_RESP, LOGS_FILE, body).decode()
        self.assertIn("rejected_log_records: 1", decoded)
        self.assertIn('has the key \\"a\\" twice', decoded)
        doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {"body": {"stringValue": "kept too"}},
            {"attributes": [{"key": "b", "value": {}}, {"key": "b", "value": {}}]}]}]}]}
        status, body, _ = curl(self.port, "/v1/logs", json.dumps(doc).encode(), "application/json")
        self.assertEqual(status, 200)
        partial = json.loads(body)["partialSuccess"]
        self.assertEqual(partial["rejectedLogRecords"], 1)
        self.assertEqual(sorted(r["body"] for r in self.records(2)), ["kept", "kept too"])

    def test_bad_requests_are_refused_and_export_nothing(self):
        self.put(max_body_bytes=2048)
        # A body of arrays in arrays that OTLP/JSON takes (32 levels) but a
        # record could not hold (it would sit deeper than 32).
        deep = {"stringValue": "bottom"}
        for _ in range(31):
            deep = {"arrayValue": {"values": [deep]}}
        too_deep = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": deep}]}]}]}).encode()
        cases = [
            ("/v1/logs", too_deep, "application/json", 400, "a record would nest deeper than 32 levels"),
            ("/v1/logs", b"\xff\xff\xff", "application/x-protobuf", 400, "malformed protobuf"),
            ("/v1/logs", b"[1]", "application/json", 400, "must be a JSON object"),
            ("/v1/logs", b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "soon"}]}]}]}',
             "application/json", 400, "resourceLogs[0].scopeLogs[0].logRecords[0].timeUnixNano"),
            ("/v1/traces", b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz1"}]}]}]}',
             "application/json", 400, "traceId: must be an id in hex"),
            ("/v1/logs", b"{}", "text/plain", 415, "Content-Type"),
            ("/v1/logs", b"\x00" * 4096, "application/x-protobuf", 413, "larger than 2048"),
            ("/v1/logs", b"{" + b" " * 4096 + b"}", "application/json", 413, "larger than 2048"),
        ]
        for path, data, ctype, want, words in cases:
            status, body, rtype = curl(self.port, path, data, ctype)
            self.assertEqual(status, want, (data[:50], body))
            # The OTLP/HTTP answer to a refusal: a google.rpc.Status in the request's encoding.
            if ctype == "application/x-protobuf":
                self.assertEqual(rtype, "application/x-protobuf")
                decoded = protoc("decode", STATUS, STATUS_FILE, body).decode()
                self.assertIn("code: 3", decoded)
                self.assertIn(words, decoded, data[:50])
            else:
                self.assertEqual(json.loads(body)["code"], 3)
                self.assertIn(words, json.loads(body)["message"], data[:50])
        status, body, _ = curl(self.port, "/v1/logs", b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{}]}]}]}',
                               "application/json")
        self.assertEqual(status, 200, body)
        self.assertEqual(len(self.records(1)), 1, "only the good request's record")

    def test_bad_configs_are_refused(self):
        for config, words in (({"signals": ["profiles"]}, "must be logs, traces or metrics"),
                              ({"signals": []}, "must name"),
                              ({"endpoint": "udp://127.0.0.1:4318"}, "must be host:port")):
            config = {"endpoint": f"127.0.0.1:{self.port}", **config}
            spec = {"pipeline": {"nodes": {"in": {"type": "receiver:otlp", "config": config, "to": ["out"]},
                                           "out": {"type": "exporter:null"}}}}
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/otel", body=spec)
            self.assertEqual(status, 422, body)
            self.assertIn(words, json.dumps(body["error"]["details"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
