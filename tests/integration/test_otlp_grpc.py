"""receiver:otlp over gRPC (grpc_endpoint, docs/operations.md, OTLP), driven by gRPC's
own C core (Debian's python3-grpcio): logs, spans and metrics sent over
gRPC become the same records as the same request over OTLP/HTTP; gzip'd
messages are read; refusals carry the gRPC status OTLP names (and
RetryInfo under backpressure); what is not gRPC (HTTP/1.1, a wrong
content-type, an oversized header block) is refused and the instance
lives on."""

import glob
import gzip
import os
import socket
import subprocess
import unittest

from harness import (EngineTest, changes_under_load, curl_post, every_one_once, free_port, proc_status, read_ndjson,
                     wait_until)
import grpc_otlp
from grpc_otlp import WHY_NOT

if not WHY_NOT:
    import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "../../proto")
FIXTURES = {"logs": ("otlp/logs.txt", "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest",
                     "opentelemetry/proto/collector/logs/v1/logs_service.proto"),
            "metrics": ("otlp/metrics.txt", "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest",
                        "opentelemetry/proto/collector/metrics/v1/metrics_service.proto")}


def encoded(signal):
    """A fixture request, encoded by protoc."""
    text, message, proto_file = FIXTURES[signal]
    with open(os.path.join(HERE, text), "rb") as f:
        return subprocess.run(["protoc", f"--proto_path={PROTO}", f"--encode={message}", proto_file],
                              input=f.read(), capture_output=True, check=True).stdout


def hpack_string(data):
    """An HPACK string literal, not Huffman-coded (7-bit prefix length)."""
    n, out = len(data), b""
    if n < 127:
        return bytes([n]) + data
    out, n = bytes([127]), n - 127
    while n >= 128:
        out, n = out + bytes([n % 128 + 128]), n // 128
    return out + bytes([n]) + data


def h2_frame(type_, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([type_, flags]) + stream.to_bytes(4, "big") + payload


def h2_exchange(port, frames, timeout=5, source=None):
    """Sends the client preface, empty SETTINGS and frames (from the source
    address, when given); reads until the server closes or stream 1 ends.
    Returns [(type, flags, stream, payload)]."""
    got, data = [], b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=(source, 0) if source else None) as s:
        try:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, b"") + b"".join(frames))
        except (ConnectionResetError, BrokenPipeError):
            pass  # the server cut the connection before taking it all (a bomb): what it said is still to read
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            data += chunk
            while len(data) >= 9 and len(data) >= 9 + int.from_bytes(data[:3], "big"):
                n = int.from_bytes(data[:3], "big")
                frame = (data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7fffffff, data[9:9 + n])
                got.append(frame)
                data = data[9 + n:]
            if any(t == 7 or (sid == 1 and (t == 3 or (t in (0, 1) and f & 1))) for t, f, sid, _ in got):
                break
    return got


class OtlpGrpcBase(EngineTest):
    """An admin engine and a pipeline with receiver:otlp on both transports."""

    def setUp(self):
        self.start_admin_engine()
        self.out = self.engine.out_dir
        self.port, self.grpc_port = free_port(), free_port()
        self.target = f"127.0.0.1:{self.grpc_port}"

    def put(self, nodes=None, cores=1, timeout=5.0, **config):
        config = {"endpoint": f"127.0.0.1:{self.port}", "grpc_endpoint": self.target, **config}
        nodes = nodes or {"out": {"type": "exporter:file",
                                  "config": {"path": f"{self.out}/grpc-{{core}}-{{generation}}.ndjson"}}}
        spec = {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:otlp", "config": config, "to": [next(iter(nodes))]}, **nodes}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/grpc", body=spec,
                                          timeout=timeout)
        self.assertEqual(status, 200, body)
        return body

    def records(self, n):
        def rows():
            found = []
            for path in sorted(glob.glob(f"{self.out}/grpc-*.ndjson")):
                found += read_ndjson(path)
            return found if len(found) >= n else None
        return wait_until(rows, 10, f"{n} records")

    def channel(self):
        channel = grpc.insecure_channel(self.target)
        self.addCleanup(channel.close)
        return channel

    def raw_export(self, channel, signal, data, **kw):
        call = channel.unary_unary(grpc_otlp.METHODS[signal], request_serializer=None,
                                   response_deserializer=grpc_otlp.response_class(signal).FromString)
        return call(data, timeout=10, **kw)


@unittest.skipIf(WHY_NOT, WHY_NOT)
class OtlpGrpc(OtlpGrpcBase):

    def test_the_same_request_over_grpc_and_http_makes_the_same_records(self):
        self.put()
        channel = self.channel()
        seen = 0  # one core, one file: records in the order they came
        for signal, count in (("logs", 1), ("metrics", 6)):
            data = encoded(signal)
            response = self.raw_export(channel, signal, data)
            self.assertFalse(response.HasField("partial_success"))
            over_grpc = self.records(seen + count)[seen:]
            status = curl_post(self.port, f"/v1/{signal}", data, "application/x-protobuf")[0]
            self.assertEqual(status, 200)
            over_http = self.records(seen + 2 * count)[seen + count:]
            seen += 2 * count
            self.assertEqual(len(over_grpc), count)
            self.assertEqual(over_grpc, over_http, signal)

    def test_logs_and_spans_arrive_whole_and_gzip_is_read(self):
        self.put()
        channel = self.channel()
        self.assertEqual(grpc_otlp.export(channel, "logs", grpc_otlp.log_request("plain", 3)).ByteSize(), 0)
        grpc_otlp.export(channel, "logs", grpc_otlp.log_request("gz", 3), compression=grpc.Compression.Gzip)
        spans = grpc_otlp.request_class("traces")()
        span = spans.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id, span.span_id, span.name, span.kind = bytes(range(16)), bytes(range(8)), "grpc-span", 2
        span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
        grpc_otlp.export(channel, "traces", spans)
        rows = self.records(7)
        logs = sorted((r for r in rows if r["signal"] == "log"), key=lambda r: r["body"])
        self.assertEqual([r["body"] for r in logs], ["gz-0", "gz-1", "gz-2", "plain-0", "plain-1", "plain-2"])
        first = logs[0]
        self.assertEqual((first["time_unix_nano"], first["observed_time_unix_nano"], first["severity_number"]),
                         (1700000000000000000, 1700000000500000000, 9))
        self.assertEqual((first["trace_id"], first["span_id"]),
                         ("0102030405060708090a0b0c0d0e0f10", "0102030405060708"))
        self.assertEqual((first["attributes"], first["resource"]), ({"i": 0}, {"service.name": "grpc-gz"}))
        self.assertEqual(first["scope"], {"name": "grpc.scope", "version": "1.0", "attributes": {}})
        (s,) = [r for r in rows if r["signal"] == "span"]
        self.assertEqual((s["name"], s["kind"], s["trace_id"]), ("grpc-span", 2, bytes(range(16)).hex()))

    def test_partial_success_counts_the_records_left_out(self):
        self.put(signals=["logs"])
        request = grpc_otlp.log_request("dup", 2)
        record = request.resource_logs[0].scope_logs[0].log_records[1]
        again = record.attributes.add()
        again.key, again.value.int_value = "i", 7  # the key "i" twice: this record is left out
        response = grpc_otlp.export(self.channel(), "logs", request)
        self.assertEqual(response.partial_success.rejected_log_records, 1)
        self.assertIn('"i" twice', response.partial_success.error_message)
        self.assertEqual([r["body"] for r in self.records(1)], ["dup-0"])

    def test_refusals_carry_the_status_otlp_names(self):
        self.put(signals=["logs"], max_body_bytes=4096)
        channel = self.channel()
        with self.assertRaises(grpc.RpcError) as e:
            self.raw_export(channel, "logs", b"\xff\xff\xff garbage")
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("not an OTLP logs export request", e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:  # not among its signals
            grpc_otlp.export(channel, "traces", grpc_otlp.request_class("traces")())
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        with self.assertRaises(grpc.RpcError) as e:  # past max_body_bytes
            grpc_otlp.export(channel, "logs", grpc_otlp.log_request("big", 200))
        self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("larger than 4096", e.exception.details())
        # Nothing of it became a record; the same channel still works.
        grpc_otlp.export(channel, "logs", grpc_otlp.log_request("after", 1))
        self.assertEqual([r["body"] for r in self.records(1)], ["after-0"])

    def test_a_gzip_bomb_is_refused_unread(self):
        self.put(signals=["logs"], max_body_bytes=65536)
        # A message flagged compressed whose gzip inflates far past the limit.
        import struct
        bomb = gzip.compress(b"\x00" * (64 << 20))
        frame = b"\x01" + struct.pack(">I", len(bomb)) + bomb
        status, headers, _ = self.h2_call(frame, {"grpc-encoding": "gzip"})
        self.assertEqual((status, headers.get("grpc-status")), (200, "8"))
        self.assertIn("larger than 65536 bytes once gunzipped", headers.get("grpc-message", ""))
        self.assertLess(self.peak_rss_kb(), 32 * 1024, "the bomb's 64 MiB were never inflated")

    def peak_rss_kb(self):
        """The instance's peak RSS in kB (0 under ASan: its quarantine keeps what is freed, RSS says nothing)."""
        from hostile import SANITIZED
        (pid,) = self.engine.instances().values()
        return 0 if SANITIZED else int(proc_status(pid, "VmHWM").split()[0])

    def h2_call(self, body, extra_headers, content_type="application/grpc", path=None):
        """A raw HTTP/2 call with curl (prior knowledge): (status, headers and trailers, body)."""
        args = ["curl", "-sS", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "--data-binary", "@-",
                "-H", f"Content-Type: {content_type}", "-H", "TE: trailers", "--max-time", "10"]
        for k, v in extra_headers.items():
            args += ["-H", f"{k}: {v}"]
        args.append(f"http://{self.target}{path or grpc_otlp.METHODS['logs']}")
        out = subprocess.run(args, input=body, capture_output=True, check=True).stdout.decode()
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        status = int(lines[0].split()[1])
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        return status, headers, out

    def test_what_is_not_grpc_is_refused_and_the_instance_lives(self):
        self.put(signals=["logs"])
        # A wrong content-type: HTTP 415, as gRPC over HTTP/2 says.
        status, headers, _ = self.h2_call(b"", {}, content_type="application/json")
        self.assertEqual(status, 415)
        # HTTP/1.1 on the gRPC port: a 505 that says why.
        out = subprocess.run(["curl", "-sS", "-i", "--http1.1", "--max-time", "5", "--data-binary", "x",
                              f"http://{self.target}/v1/logs"], capture_output=True, text=True)
        self.assertIn("505", out.stdout.splitlines()[0] if out.stdout else out.stderr)
        self.assertIn("HTTP/2 only", out.stdout)
        # Too many header bytes: 431.
        status, headers, _ = self.h2_call(b"", {f"x-big-{i}": "b" * 4000 for i in range(8)})
        self.assertEqual(status, 431)
        # An HPACK bomb: a 4000-byte header put in the dynamic table, then
        # named again 20,000 times by one byte each (80 MB once decoded): past
        # 64 KiB decoded the connection ends (test_grpc_hostile measures it).
        value = b"b" * 4000
        block = (b"\x83\x86" + b"\x04" + hpack_string(grpc_otlp.METHODS["logs"].encode())  # POST, http, :path
                 + b"\x01" + hpack_string(b"x")  # :authority
                 + b"\x40" + hpack_string(b"x-bomb") + hpack_string(value) + b"\xbe" * 20000)
        chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
        frames = h2_exchange(self.grpc_port, [h2_frame(9 if i else 1, (0 if i else 1) | (4 if i == len(chunks) - 1 else 0),
                                                       1, chunk) for i, chunk in enumerate(chunks)])
        (goaway,) = [p for t, f, sid, p in frames if t == 7]  # the connection ends, decoding stops there
        self.assertEqual(int.from_bytes(goaway[4:8], "big"), 11)  # ENHANCE_YOUR_CALM
        # Garbage instead of HTTP/2 frames after the preface: a GOAWAY, then the end.
        frames = h2_exchange(self.grpc_port, [b"\xff" * 64])
        self.assertIn(7, [t for t, _, _, _ in frames])
        grpc_otlp.export(self.channel(), "logs", grpc_otlp.log_request("alive", 1))
        self.assertEqual(len(self.records(1)), 1)
        status = self.admin.http("GET", "/api/v1/groups/default/pipelines/grpc/status")[1]
        self.assertEqual(status["instances"][0]["restarts"], 0)
        self.assertLess(self.peak_rss_kb(), 64 * 1024, "the bomb's 80 MB were never held")

    def test_keep_alive_channels_through_replaces_and_a_resize_fail_no_call_and_lose_nothing(self):
        def nodes(tag):
            return {"t": {"type": "processor:transform", "config": {"set": {"tag": tag}}, "to": ["out"]},
                    "out": {"type": "exporter:file",
                            "config": {"path": f"{self.out}/grpc-{{core}}-{{generation}}.ndjson"}}}
        self.put(nodes("v1"), cores=2)

        # One connection each, kept alive until a GOAWAY, with keepalive PINGs every 200 ms (answered).
        client = grpc_otlp.logs_client(self.target, options=[
            ("grpc.keepalive_time_ms", 200), ("grpc.keepalive_timeout_ms", 2000),
            ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0)])

        def change(n):
            body = self.put(nodes(f"v{min(n, 2) + 2}"), cores=2 if n < 3 else 1, timeout=60)
            self.assertEqual(body["action"], "replace" if n < 3 else "resize")
        want = changes_under_load(self, client, change)
        every_one_once(self, want, lambda: [r["body"] for r in self.all_records()], "records")
        self.assertEqual({r["tag"] for r in self.all_records()}, {"v1", "v2", "v3", "v4"})
        print(f"grpc under load: {len(want)} records over keep-alive channels, 3 replaces and a resize, "
              f"no call failed, none lost", flush=True)

    def all_records(self):
        rows = []
        for path in sorted(glob.glob(f"{self.out}/grpc-*.ndjson")):
            rows += read_ndjson(path)
        return rows

    def test_tls_with_alpn_h2_and_https(self):
        cert, key = os.path.join(self.out, "cert.pem"), os.path.join(self.out, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        self.put(tls={"cert_file": cert, "key_file": key})
        with open(cert, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        channel = grpc.secure_channel(self.target, credentials)
        self.addCleanup(channel.close)
        grpc_otlp.export(channel, "logs", grpc_otlp.log_request("tls", 2))
        self.assertEqual(sorted(r["body"] for r in self.records(2)), ["tls-0", "tls-1"])
        # OTLP/HTTP on the same node is HTTPS with the same certificate.
        out = subprocess.run(["curl", "-sS", "--cacert", cert, "-o", "/dev/null", "-w", "%{http_code}",
                              "-H", "Content-Type: application/x-protobuf", "--data-binary", "@-",
                              f"https://127.0.0.1:{self.port}/v1/logs"],
                             input=grpc_otlp.log_request("https", 1).SerializeToString(), capture_output=True)
        self.assertEqual(out.stdout, b"200", out.stderr)
        self.assertIn("https-0", [r["body"] for r in self.records(3)])
        # A client without the CA is refused by the handshake; plaintext h2c gets nothing either.
        with self.assertRaises(grpc.RpcError) as e:
            grpc_otlp.export(self.channel(), "logs", grpc_otlp.log_request("plain", 1), timeout=3)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        # A file that is not there fails the spec's instances with the file's name.
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/bad", body={"pipeline": {
            "nodes": {"in": {"type": "receiver:otlp", "config": {
                "endpoint": f"127.0.0.1:{free_port()}", "grpc_endpoint": f"127.0.0.1:{free_port()}",
                "tls": {"cert_file": "/nonexistent/cert.pem", "key_file": key}}, "to": ["out"]},
                "out": {"type": "exporter:null"}}}}, timeout=30)
        self.assertNotEqual(status, 200)
        self.assertIn("/nonexistent/cert.pem", str(body))

    def test_the_readme_tours_grpc_command(self):
        """The README's by-hand gRPC call (protoc, a line of Python, curl over HTTP/2), run as written."""
        with open(os.path.join(HERE, "../../README.md")) as f:
            readme = f.read()
        start = readme.index("   echo 'resource_logs")
        block = readme[start:readme.index("   # grpc-status: 0", start)]
        command = "\n".join(line[3:] for line in block.splitlines()).replace("127.0.0.1:4317", self.target)
        self.put(signals=["logs"])
        out = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=os.path.join(HERE, "../.."),
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.stdout.strip(), "grpc-status: 0", out.stderr)
        (log,) = self.records(1)
        self.assertEqual((log["severity_number"], log["body"]), (9, "over gRPC"))

    def test_a_connection_runs_at_most_100_calls_at_once(self):
        self.put(signals=["logs"])
        head = (b"\x83\x86\x04" + hpack_string(grpc_otlp.METHODS["logs"].encode()) + b"\x01" + hpack_string(b"x")
                + b"\x0f\x10" + hpack_string(b"application/grpc"))  # POST, http, :path, :authority, content-type
        # 101 calls opened, none finished: the 101st (stream 201) is refused, the others wait.
        with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=5) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, b"")
                      + b"".join(h2_frame(1, 0x4, sid, head) for sid in range(1, 203, 2)))
            data, resets = b"", {}
            while 201 not in resets:
                chunk = s.recv(65536)
                self.assertTrue(chunk, "the connection stays open")
                data += chunk
                while len(data) >= 9 and len(data) >= 9 + int.from_bytes(data[:3], "big"):
                    n = int.from_bytes(data[:3], "big")
                    if data[3] == 3:
                        resets[int.from_bytes(data[5:9], "big")] = int.from_bytes(data[9:13], "big")
                    data = data[9 + n:]
        self.assertEqual(resets, {201: 7})  # REFUSED_STREAM: the client may send it again, nothing was taken

    def test_route_lua_filter_and_transform_work_on_metric_records(self):
        lua = "function process(r) if r.value then r.value = r.value * 2 end r.name = 'scaled.' .. r.name return r end"
        self.put(nodes={
            "split": {"type": "processor:route", "config": {
                "routes": [{"when": {"field": "signal", "op": "eq", "value": "metric"}, "to": ["scale"]}],
                "default": ["other"]}},
            "scale": {"type": "processor:lua", "config": {"script": lua}, "to": ["gauges"]},
            "gauges": {"type": "processor:filter", "config": {"field": "type", "op": "eq", "value": "gauge"},
                       "to": ["stamp"]},
            "stamp": {"type": "processor:transform", "config": {"set": {"stage": "scaled"}}, "to": ["metrics"]},
            "metrics": {"type": "exporter:file", "config": {"path": f"{self.out}/grpc-metrics-{{core}}.ndjson"}},
            "other": {"type": "exporter:file", "config": {"path": f"{self.out}/grpc-other-{{core}}.ndjson"}}})
        channel = self.channel()
        self.raw_export(channel, "metrics", encoded("metrics"))
        grpc_otlp.export(channel, "logs", grpc_otlp.log_request("routed", 1))
        rows = self.records(2)
        (gauge,) = [r for r in rows if r["signal"] == "metric"]  # the one gauge point of the six
        self.assertEqual((gauge["name"], gauge["type"], gauge["stage"], gauge["value"]),
                         ("scaled.queue.depth", "gauge", "scaled", -14))  # -7 as sent, doubled by the script
        (log,) = [r for r in rows if r["signal"] == "log"]
        self.assertEqual(log["body"], "routed-0")

    def test_backpressure_is_resource_exhausted_with_retry_info(self):
        nobody = free_port()  # a PUSH with no peer holds as much as it may at once
        self.put(nodes={"stuck": {"type": "exporter:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{nobody}",
                                                                      "hwm": 1, "queue": {"max_bytes": 1024}}}})
        channel = self.channel()
        codes = []
        for i in range(400):  # a 1 KiB queue of one-record batches: full within a few dozen
            try:
                grpc_otlp.export(channel, "logs", grpc_otlp.log_request(f"p{i}", 1))
                codes.append("OK")
            except grpc.RpcError as e:
                codes.append(e.code().name)
                if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    self.assertEqual(grpc_otlp.retry_delay_ms(e), 1000)
                    self.assertIn("the exporters are behind", e.details())
                    break
        self.assertEqual(codes[0], "OK")
        self.assertEqual(codes[-1], "RESOURCE_EXHAUSTED", codes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
