"""exporter:otlp with protocol: grpc (docs/operations.md, OTLP), against a server
nobody here wrote: gRPC's own C core (Debian's python3-grpcio) serving the
three OTLP services. What drover sends decodes equal to the request that
came in (logs, spans, every metric type); drover → drover over gRPC is
lossless; UNAVAILABLE and RESOURCE_EXHAUSTED with RetryInfo are retried
and nothing is lost; RESOURCE_EXHAUSTED without RetryInfo is not."""

import glob
import os
import threading
import time
import unittest
from concurrent import futures

from harness import EngineTest, curl_post, free_port, read_ndjson, wait_until
import grpc_otlp
from grpc_otlp import WHY_NOT
from test_otlp_grpc import encoded

if not WHY_NOT:
    import grpc

HERE = os.path.dirname(os.path.abspath(__file__))


def spans():
    """An ExportTraceServiceRequest with every span field set."""
    req = grpc_otlp.request_class("traces")()
    rs = req.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "spans"
    ss = rs.scope_spans.add()
    ss.scope.name = "tracer"
    for i in range(2):
        s = ss.spans.add()
        s.trace_id, s.span_id, s.parent_span_id = bytes(range(16)), bytes([i + 1] * 8), bytes([9] * 8)
        s.trace_state, s.name, s.kind, s.flags = "k=v", f"span-{i}", 3, 1
        s.start_time_unix_nano, s.end_time_unix_nano = 1700000000000000000 + i, 1700000001000000000 + i
        a = s.attributes.add()
        a.key, a.value.double_value = "d", 1.5
        e = s.events.add()
        e.time_unix_nano, e.name, e.dropped_attributes_count = 1700000000500000000, "event", 4
        link = s.links.add()
        link.trace_id, link.span_id = bytes([7] * 16), bytes([8] * 8)
        link.trace_state, link.flags, link.dropped_attributes_count = "l=1", 257, 5
        s.dropped_attributes_count, s.dropped_events_count, s.dropped_links_count = 1, 2, 3
        s.status.code, s.status.message = 2, "failed"
    return req


class Backend:
    """A gRPC OTLP server: keeps every request; script is a list of
    (code, retry_ms) answers to give first, in order (then OK)."""

    def __init__(self):
        self.port = free_port()
        self.requests = {"logs": [], "traces": [], "metrics": []}
        self.calls = []  # code name of each answer, in order
        self.script = []
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        services = {"logs": "opentelemetry.proto.collector.logs.v1.LogsService",
                    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
                    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService"}
        for signal, service in services.items():
            handler = grpc.unary_unary_rpc_method_handler(
                self.handler(signal), request_deserializer=grpc_otlp.request_class(signal).FromString,
                response_serializer=lambda m: m.SerializeToString())
            self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {"Export": handler}),))
        self.server.add_insecure_port(f"127.0.0.1:{self.port}")
        self.server.start()

    def handler(self, signal):
        def export(request, context):
            with self.lock:
                code, retry_ms = self.script.pop(0) if self.script else (None, None)
                self.calls.append(code.name if code else "OK")
                if not code:
                    self.requests[signal].append(request)
            if code:
                if retry_ms is not None:
                    m = grpc_otlp.pb()
                    info = m.error_details.RetryInfo()
                    info.retry_delay.seconds, info.retry_delay.nanos = retry_ms // 1000, retry_ms % 1000 * 1000000
                    status = m.status.Status(code=code.value[0], message="test says no")
                    status.details.add().Pack(info)
                    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
                context.abort(code, "test says no")
            return grpc_otlp.response_class(signal)()
        return export

    def close(self):
        self.server.stop(0)


@unittest.skipIf(WHY_NOT, WHY_NOT)
class OtlpGrpcExporter(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.out = self.engine.out_dir
        self.backend = Backend()
        self.addCleanup(self.backend.close)
        self.port = free_port()

    def put(self, name, nodes, port=None, **receiver):
        receiver = {"endpoint": f"127.0.0.1:{port or self.port}", **receiver}
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:otlp", "config": receiver, "to": list(nodes)}, **nodes}}}
        status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec)
        self.assertEqual(status, 200, body)

    def exporter(self, **config):
        return {"type": "exporter:otlp", "config": {"endpoint": f"127.0.0.1:{self.backend.port}", "protocol": "grpc",
                                                    "batch": {"max_delay_ms": 20},
                                                    "retry": {"initial_ms": 50, "max_ms": 200}, **config}}

    def test_what_it_sends_decodes_equal_to_the_request_that_came_in(self):
        for compression in ("gzip", "none"):
            with self.subTest(compression=compression):
                self.backend.requests = {"logs": [], "traces": [], "metrics": []}
                self.put("out", {"grpc": self.exporter(compression=compression)})
                sent = {"logs": encoded("logs"), "metrics": encoded("metrics"),
                        "traces": spans().SerializeToString()}
                for signal, data in sent.items():
                    self.assertEqual(curl_post(self.port, f"/v1/{signal}", data, "application/x-protobuf")[0], 200)
                wait_until(lambda: all(self.backend.requests.values()), 10, "every signal received")
                for signal, data in sent.items():
                    (got,) = self.backend.requests[signal]
                    self.maxDiff = None
                    self.assertEqual(str(got), str(grpc_otlp.request_class(signal).FromString(data)), signal)

    def test_drover_to_drover_over_grpc_is_lossless(self):
        grpc_port = free_port()
        self.put("second", {"out": {"type": "exporter:file", "config": {"path": f"{self.out}/second.ndjson"}}},
                 port=free_port(), grpc_endpoint=f"127.0.0.1:{grpc_port}")
        self.put("first", {"copy": {"type": "exporter:file", "config": {"path": f"{self.out}/first.ndjson"}},
                           "grpc": self.exporter(endpoint=f"http://127.0.0.1:{grpc_port}")})
        for signal in ("logs", "metrics"):
            self.assertEqual(curl_post(self.port, f"/v1/{signal}", encoded(signal), "application/x-protobuf")[0], 200)
        first = wait_until(lambda: (lambda r: r if len(r) >= 7 else None)(read_ndjson(f"{self.out}/first.ndjson")),
                           10, "7 records in")
        second = wait_until(lambda: (lambda r: r if len(r) >= 7 else None)(
            read_ndjson(f"{self.out}/second.ndjson") if os.path.exists(f"{self.out}/second.ndjson") else []),
            10, "7 records through gRPC")
        key = lambda r: (r["signal"], r.get("name", ""), r["time_unix_nano"])  # noqa: E731
        self.assertEqual(sorted(second, key=key), sorted(first, key=key))

    def test_unavailable_and_resource_exhausted_with_retry_info_are_retried_and_nothing_is_lost(self):
        self.backend.script = [(grpc.StatusCode.UNAVAILABLE, None), (grpc.StatusCode.UNAVAILABLE, None),
                               (grpc.StatusCode.RESOURCE_EXHAUSTED, 300), (grpc.StatusCode.ABORTED, None),
                               (grpc.StatusCode.DEADLINE_EXCEEDED, None)]
        self.put("out", {"grpc": self.exporter()})
        start = time.monotonic()
        self.assertEqual(curl_post(self.port, "/v1/logs", encoded("logs"), "application/x-protobuf")[0], 200)
        wait_until(lambda: self.backend.requests["logs"], 15, "the batch delivered at last")
        self.assertEqual(self.backend.calls, ["UNAVAILABLE", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "ABORTED",
                                              "DEADLINE_EXCEEDED", "OK"])
        self.assertGreaterEqual(time.monotonic() - start, 0.3, "RetryInfo's 300 ms were waited")
        self.assertEqual(self.backend.requests["logs"][0], grpc_otlp.request_class("logs").FromString(encoded("logs")))
        # Without RetryInfo, RESOURCE_EXHAUSTED means retrying will not help: dropped and counted.
        self.backend.script = [(grpc.StatusCode.RESOURCE_EXHAUSTED, None)]
        self.assertEqual(curl_post(self.port, "/v1/logs", encoded("logs"), "application/x-protobuf")[0], 200)
        def errors():
            (inst,) = self.admin.http("GET", "/api/v1/groups/default/pipelines/out/status")[1]["instances"]
            return inst["errors"]
        wait_until(lambda: errors() >= 1, 10, "the second batch counted in errors (the first, retried and delivered, "
                   "is not)")
        sent = grpc_otlp.request_class("logs").FromString(encoded("logs"))
        self.assertEqual(errors(), sum(len(sl.log_records) for rl in sent.resource_logs for sl in rl.scope_logs),
                         "exactly the records of the batch given up")
        self.assertEqual(self.backend.calls, ["UNAVAILABLE", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "ABORTED",
                                              "DEADLINE_EXCEEDED", "OK", "RESOURCE_EXHAUSTED"], "not retried")
        self.assertEqual(len(self.backend.requests["logs"]), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
