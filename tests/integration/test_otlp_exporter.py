"""exporter:otlp through the real binaries: what it posts decodes with
protoc (protobuf-compiler) against our definitions exactly as the request
that came in; log → OTLP → log through drover's own receiver:otlp is
lossless in both encodings, gzip'd or not; records that were not born OTLP
go out as logs."""

import glob
import json
import os
import subprocess
import unittest

from capture import Capture
from harness import Admin, EngineTest, curl_post, engine_yaml, free_port, read_ndjson, wait_until
from test_otlp_receiver import (HAVE_TOOLS, HERE, LOGS_FILE, LOGS_REQ, METRICS_FILE, METRICS_REQ, TRACES_FILE,
                                TRACES_REQ, protoc)

FIXTURES = os.path.join(HERE, "otlp")


@unittest.skipUnless(HAVE_TOOLS, "needs curl and protoc")
class OtlpExporter(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.out = self.engine.out_dir
        self.capture = Capture()

    def tearDown(self):
        self.capture.close()

    def put(self, name, receiver, exporters):
        nodes = {"in": {**receiver, "to": list(exporters)}, **exporters}
        status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}",
                                          body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}})
        self.assertEqual(status, 200, body)

    def file(self, name):
        return {"type": "exporter:file", "config": {"path": f"{self.out}/{name}-{{core}}-{{generation}}.ndjson"}}

    def rows(self, name):
        found = []
        for path in sorted(glob.glob(f"{self.out}/{name}-*.ndjson")):
            found += read_ndjson(path)
        return found

    def fixture(self, name):
        with open(os.path.join(FIXTURES, name), "rb") as f:
            return f.read()

    def test_what_it_posts_decodes_with_protoc_exactly_as_the_request_that_came_in(self):
        port = free_port()
        self.put("otel", {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"}},
                 {"out": {"type": "exporter:otlp", "config": {"endpoint": self.capture.url()}}})
        request = protoc("encode", LOGS_REQ, LOGS_FILE, self.fixture("logs.txt"))
        status, body, _, _ = curl_post(port, "/v1/logs", request, "application/x-protobuf")
        self.assertEqual(status, 200, body)
        status, body, _, _ = curl_post(port, "/v1/traces", self.fixture("traces.json"), "application/json")
        self.assertEqual(status, 200, body)
        wait_until(lambda: {r.path for r in self.capture.accepted} == {"/v1/logs", "/v1/traces"}, 10,
                   "logs and traces posted")
        by_path = {r.path: r for r in self.capture.accepted}
        logs = by_path["/v1/logs"]
        self.assertRegex(logs.headers.get("User-Agent", ""), r"^drover/\d+\.\d+\.\d+$")  # docs/operations.md
        self.assertEqual((logs.headers["Content-Type"], logs.headers["Content-Encoding"]),
                         ("application/x-protobuf", "gzip"))
        self.assertEqual(protoc("decode", LOGS_REQ, LOGS_FILE, logs.body),
                         protoc("decode", LOGS_REQ, LOGS_FILE, request), "the same request, field for field")
        traces = protoc("decode", TRACES_REQ, TRACES_FILE, by_path["/v1/traces"].body).decode()
        spec = json.loads(self.fixture("traces.json"))
        span = spec["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        for field in ("kind: 2", f'start_time_unix_nano: {span["startTimeUnixNano"]}', 'key: "my.span.attr"',
                      'name: "ev"', 'message: "boom"', "code: 2", 'string_value: "my.service"'):
            self.assertIn(field, traces)

    def round_trip(self, encoding, compression):
        back, front = free_port(), free_port()
        self.put("back", {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{back}"}},
                 {"out": self.file("back")})
        self.put("front", {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{front}"}},
                 {"copy": self.file("front"),
                  "out": {"type": "exporter:otlp", "config": {"endpoint": f"http://127.0.0.1:{back}/",
                                                              "encoding": encoding, "compression": compression}}})
        for path, body, ctype in (("/v1/logs", self.fixture("logs.json"), "application/json"),
                                  ("/v1/traces", self.fixture("traces.json"), "application/json"),
                                  ("/v1/logs", protoc("encode", LOGS_REQ, LOGS_FILE, self.fixture("logs.txt")),
                                   "application/x-protobuf")):
            status, answer, _, _ = curl_post(front, path, body, ctype)
            self.assertEqual(status, 200, answer)
        sent = wait_until(lambda: (lambda r: r if len(r) >= 3 else None)(self.rows("front")), 10, "records in")
        got = wait_until(lambda: (lambda r: r if len(r) >= len(sent) else None)(self.rows("back")), 10,
                         "records through OTLP")

        def key(record):
            return json.dumps(record, sort_keys=True)
        self.assertEqual(sorted(map(key, got)), sorted(map(key, sent)), "log -> OTLP -> log is lossless")
        self.assertEqual({r["signal"] for r in got}, {"log", "span"})

    def test_log_otlp_log_is_lossless_in_protobuf(self):
        self.round_trip("protobuf", "gzip")

    def test_log_otlp_log_is_lossless_in_json(self):
        self.round_trip("json", "none")

    def test_metric_otlp_metric_is_lossless_in_json(self):
        self.metrics_round_trip("json")

    def test_metric_otlp_metric_is_lossless(self):
        """Data points go out grouped back into metrics (by resource, scope,
        name, type, unit, description, temporality, metadata) and come back
        through drover's own receiver as the same records, every type."""
        request = self.metrics_round_trip("protobuf")
        # What it posts is the request that came in, field for field: the
        # points grouped back into the same metrics, in the same order.
        port = free_port()
        self.put("tap", {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"}},
                 {"out": {"type": "exporter:otlp", "config": {"endpoint": self.capture.url()}}})
        status, answer, _, _ = curl_post(port, "/v1/metrics", request, "application/x-protobuf")
        self.assertEqual(status, 200, answer)
        wait_until(lambda: [r for r in self.capture.accepted if r.path == "/v1/metrics"], 10, "metrics posted")
        (posted,) = [r for r in self.capture.accepted if r.path == "/v1/metrics"]
        self.assertEqual(posted.headers["Content-Type"], "application/x-protobuf")
        self.assertEqual(protoc("decode", METRICS_REQ, METRICS_FILE, posted.body),
                         protoc("decode", METRICS_REQ, METRICS_FILE, request))

    def metrics_round_trip(self, encoding):
        back, front = free_port(), free_port()
        self.put("back", {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{back}"}},
                 {"out": self.file("back")})
        self.put("front", {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{front}"}},
                 {"copy": self.file("front"),
                  "out": {"type": "exporter:otlp", "config": {"endpoint": f"http://127.0.0.1:{back}",
                                                              "encoding": encoding}}})
        request = protoc("encode", METRICS_REQ, METRICS_FILE, self.fixture("metrics.txt"))
        for body, ctype in ((request, "application/x-protobuf"), (self.fixture("metrics.json"), "application/json")):
            status, answer, _, _ = curl_post(front, "/v1/metrics", body, ctype)
            self.assertEqual(status, 200, answer)
        sent = wait_until(lambda: (lambda r: r if len(r) >= 12 else None)(self.rows("front")), 10, "points in")
        got = wait_until(lambda: (lambda r: r if len(r) >= 12 else None)(self.rows("back")), 10,
                         "points through OTLP")

        def key(record):
            return json.dumps(record, sort_keys=True)
        self.assertEqual(sorted(map(key, got)), sorted(map(key, sent)), "metric -> OTLP -> metric is lossless")
        self.assertEqual({r["type"] for r in got}, {"gauge", "sum", "histogram", "exponential_histogram", "summary"})
        return request

    def test_records_not_born_otlp_go_out_as_logs_and_other_signals_are_counted(self):
        back, front = free_port(), free_port()
        self.put("back", {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{back}"}},
                 {"out": self.file("back")})
        self.put("front", {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{front}"}},
                 {"out": {"type": "exporter:otlp", "config": {"endpoint": f"http://127.0.0.1:{back}"}}})
        status, body, _, _ = curl_post(front, "/", b'{"message": "disk full", "host": "db1", "n": 3, "f": 0.5}\n'
                                       b'{"signal": "log", "body": {"k": [1, "x"]}, "env": "prod", '
                                       b'"attributes": {"env": "own"}, "trace_id": "nothex"}\n'
                                       b'{"signal": "metric", "value": 1}\n', "application/x-ndjson")
        self.assertEqual(status, 200, body)
        got = wait_until(lambda: (lambda r: r if len(r) >= 2 else None)(self.rows("back")), 10, "2 logs")
        plain = next(r for r in got if r["body"] == "disk full")
        self.assertEqual(plain["attributes"], {"host": "db1", "n": 3, "f": 0.5})
        other = next(r for r in got if r["body"] != "disk full")
        self.assertEqual(other["body"], {"k": [1, "x"]})
        self.assertEqual(other["attributes"], {"env": "own", "trace_id": "nothex"}, "its own attribute wins")
        self.engine.wait_log(r"export failed node=out records=1 reason=.signal 'metric' has no OTLP form")


if __name__ == "__main__":
    unittest.main(verbosity=2)
