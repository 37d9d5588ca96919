#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/TARGET/): valid
inputs of every kind each target parses, plus a few near misses, so the
fuzzer starts from deep inside the parsers. Rerun after a format changes:
    /usr/bin/python3 tests/fuzz/seeds.py"""

import glob
import gzip
import json
import os
import shutil
import subprocess

import msgpack

TARGETS = ("config", "spec", "msg", "admin", "batch", "plan", "syslog", "http_body", "otlp", "otlp_depth", "otlp_metrics", "wal", "grpc",
           "remote_write", "prom_text", "ottl")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))

SPEC = {"cores": {"count": 2}, "nodes": {
    "in": {"type": "receiver:zmq", "config": {"endpoint": "tcp://127.0.0.1:5555", "ack": True}, "to": ["t"]},
    "t": {"type": "processor:transform", "config": {"set": {"env": "prod"}, "rename": {"msg": "message"},
                                                      "delete": ["debug"]}, "to": ["f"]},
    "f": {"type": "processor:filter", "config": {"field": "level", "op": "ge", "value": 3}, "to": ["out", "z"]},
    "out": {"type": "exporter:file", "config": {"path": "/tmp/x-{core}-{generation}.ndjson", "format": "ndjson"}},
    "z": {"type": "exporter:zmq", "config": {"endpoint": "tcp://127.0.0.1:6000", "socket": "push", "hwm": 10}}},
    "policies": {"restart": {"max_restarts": 5, "window_secs": 60, "initial_backoff_ms": 100,
                             "max_backoff_ms": 30000}}}
GEN = {"cores": {"set": [0, 1]}, "nodes": {
    "g": {"type": "receiver:generator", "config": {"rate": 10, "count": 5, "record": {"a": 1}}, "to": ["n"]},
    "n": {"type": "exporter:null"}}}


def write(target, name, data):
    path = os.path.join(HERE, "corpus", target, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    for target in TARGETS:
        shutil.rmtree(os.path.join(HERE, "corpus", target), ignore_errors=True)
        os.makedirs(os.path.join(HERE, "corpus", target))

    for path in [os.path.join(ROOT, "examples/drover.yaml"), os.path.join(ROOT, "deploy/drover.yaml")]:
        write("config", os.path.basename(os.path.dirname(path)) + ".yaml", open(path).read())
    write("config", "engine.yaml", "engine:\n  run_dir: /tmp/d\n  heartbeat_interval_ms: 200\n  credit_window: 8\n"
          "  limits: { max_pipelines: 3, max_message_bytes: 2048 }\n  state_file: /tmp/s.json\n"
          "  admin: { zmq: 'ipc:///tmp/a', http: '127.0.0.1:1', curve: { server_secret_file: a, clients_dir: b } }\n")
    write("config", "flow.yaml", "groups:\n  g:\n    pipelines:\n      p: " + json.dumps(SPEC) + "\n      q: "
          + json.dumps(GEN) + "\n")
    write("config", "anchors.yaml", "a: &x [1, 2]\nb: *x\n")
    write("config", "bad.yaml", "engine:\n  shutdown_timeout_secs: -1\ngroups: [1\n")

    write("spec", "zmq.json", json.dumps({"pipeline": SPEC, "step_timeout_secs": 5}))
    write("spec", "gen.json", json.dumps({"pipeline": GEN}))
    write("spec", "all.json", json.dumps({"cores": {"all": True}, "nodes": {"g": {"type": "receiver:generator",
                                                                                   "to": ["n"]},
                                                                             "n": {"type": "exporter:null"}}}))
    write("spec", "cycle.json", json.dumps({"nodes": {"a": {"type": "processor:filter", "to": ["a"]}}}))
    write("spec", "route.json", json.dumps({"nodes": {
        "g": {"type": "receiver:generator", "to": ["r"]},
        "r": {"type": "processor:route", "config": {"routes": [
            {"when": {"field": "level", "op": "ge", "value": 3}, "to": ["a", "b"]},
            {"when": {"field": "x", "op": "exists"}, "to": ["r"]}], "default": ["b"]}},
        "a": {"type": "exporter:null"}, "b": {"type": "exporter:otlp", "config": {
            "endpoint": "http://127.0.0.1:4318", "batch": {"max_records": 10}, "headers": {"X-A": "b"}}}}}))
    write("spec", "lua.json", json.dumps({"nodes": {
        "g": {"type": "receiver:generator", "to": ["s"]},
        "s": {"type": "processor:lua", "config": {
            "script": "n = 0\nfunction process(r) n = n + 1 r.n = n return r end", "on_error": "pass",
            "max_instructions": 1000}, "to": ["a"]},
        "a": {"type": "exporter:null"}}}))

    def msg(**fields):
        return msgpack.packb({"v": 1, **fields})
    spec = {"nodes": GEN["nodes"]}
    seeds = {
        "hello": msg(type="hello", role="worker", instance="default/p@1#0", pid=42),
        "spec": msg(type="spec", instance="default/p@1#0", pipeline="default:p", generation=1, core=0, spec=spec,
                    heartbeat_ms=1000, credit_window=16, data_endpoint="ipc:///tmp/d"),
        "ready": msg(type="ready", instance="default/p@1#0"),
        "heartbeat": msg(type="heartbeat", instance="broker", records_in=1, records_out=2, errors=3, batches=4),
        "credit": msg(type="credit", n=16, reset=True, synced=True),
        "sync_answer": msg(type="credit", n=16, reset=True, synced=True, sync_id=3),
        "sync": msg(type="sync", sync_id=3),
        "pipeline_set": msg(type="pipeline_set", pipeline="default:p",
                            receivers=[{"node": "in", "endpoint": "tcp://127.0.0.1:1", "ack": True}]),
        "instance_add": msg(type="instance_add", pipeline="default:p", instance="default/p@1#0", receivers=["in"]),
        "bound": msg(type="bound", pipeline="default:p", node="in", endpoint="tcp://x:1", ok=False, reason="busy"),
        "batch": msg(type="batch", node="in"),
        "version2": msgpack.packb({"v": 2, "type": "ready", "instance": "x"}),
    }
    for name, data in seeds.items():
        write("msg", name, data)

    envelopes = {
        "status": {"method": "GET", "path": "/status"},
        "put": {"method": "put", "path": "/api/v1/groups/default/pipelines/p?wait=true&timeout_secs=5",
                "query": {"dry_run": True, "n": 3}, "body": {"pipeline": SPEC}},
        "delete": {"method": "DELETE", "path": "/api/v1/groups/g", "body": None},
        "bad": {"method": "GET", "path": "status", "query": [1]},
    }
    for name, doc in envelopes.items():
        write("admin", name, msgpack.packb(doc))

    # The plan target: PUT envelopes whose spec goes through normalization
    # and planning, hostile ones among them (bin values, bad UTF-8, depth).
    plans = {
        "zmq": {"pipeline": SPEC},
        "gen": {"pipeline": GEN},
        "resize": {"pipeline": {**GEN, "cores": {"count": 3}}},
        "same": {"pipeline": {"cores": {"count": 2}, "nodes": {
            "g": {"type": "receiver:generator", "to": ["n"]}, "n": {"type": "exporter:null"}}}},
        "confined": {"pipeline": {"nodes": {"g": {"type": "receiver:generator", "to": ["o"]},
                                            "o": {"type": "exporter:file",
                                                  "config": {"path": "/var/lib/drover/{pipeline}.ndjson"}}}}},
        "bin": {"pipeline": {"nodes": {"g": {"type": "receiver:generator", "to": ["o"]},
                                       "o": {"type": "exporter:file", "config": {"path": b"/etc/x"}}}}},
        "deep": {"pipeline": {"nodes": {"g": {"type": "receiver:generator", "config": {"record": {
            "d": json.loads("[" * 20 + "1" + "]" * 20)}}, "to": ["n"]}, "n": {"type": "exporter:null"}}}},
    }
    for name, body in plans.items():
        write("plan", name, msgpack.packb({"method": "PUT", "path": "/api/v1/groups/default/pipelines/p",
                                           "body": body}, use_bin_type=True))
    write("plan", "badutf8", msgpack.packb({"method": "PUT", "path": "/x", "body": {"pipeline": {"nodes": {
        "g": {"type": "receiver:generator", "config": {"record": {"m": "\udcff"}}, "to": ["n"]},
        "n": {"type": "exporter:null"}}}}}, unicode_errors="surrogateescape"))

    batches = {
        "record": {"seq": 1, "level": 3, "a": "x", "c": None},
        "batch": [{"seq": i, "level": i % 5, "msg": "héllo\n\"quoted\"\t\u0001", "f": 1.5 / (i + 1),
                   "neg": -i, "big": 2 ** 63 + i, "bin": b"\x00\xff", "nested": {"l": [1, [2, {"k": True}]]}}
                   for i in range(8)],
        "empty": [],
        "notmap": [{"a": 1}, 2],
    }
    for name, doc in batches.items():
        write("batch", name, msgpack.packb(doc, use_bin_type=True))
    write("batch", "ext", msgpack.packb([{"e": msgpack.ExtType(5, b"abc")}]))
    write("batch", "nonstr-keys", b"\x81\x01\x02")
    # syslog: what util-linux logger sends (both formats), nil values,
    # repeated SD-IDs and params, and a line that is neither.
    lines = {
        "rfc5424": '<13>1 2026-11-23T13:34:51.004716+00:00 vm myapp 15992 ID47 [timeQuality tzKnown="1" '
                   'isSynced="0"][zoo@123 tiger="hungry" zebra="str\\"ipes"] hello world',
        "rfc3164": "<13>Nov 23 13:34:50 vm myapp: hello world",
        "rfc3164-pid": "<86>Nov  3 01:02:03 host sshd[4242]: Accepted publickey\n",
        "nil": "<165>1 - - - - - -",
        "sd-repeats": '<13>1 - h a - - [x a="1" a="2" b="\\]"][x c="3"] m',
        "raw": "just a line",
    }
    for name, line in lines.items():
        write("syslog", name, line)
    # http_body: the first byte says NDJSON (bit 0) and gzip'd (bit 1).
    bodies = {
        "ndjson": (1, b'{"n": 1, "s": "a"}\n\n{"n": 2, "nested": {"x": [1, 2.5, null]}}\r\n'),
        "json-array": (0, b'[{"n": 1}, {"u": "\\u00e9", "t": true}]'),
        "json-object": (0, b'{"n": 1}'),
        "bad-line": (1, b'{"n": 1}\n{"n": \n'),
        "duplicate": (0, b'{"n": 1, "n": 2}'),
        "gzip-ndjson": (3, gzip.compress(b'{"n": 1}\n{"n": 2}\n')),
        "deep": (0, b'{"d": ' + b"[" * 40 + b"]" * 40 + b"}"),
    }
    for name, (mode, body) in bodies.items():
        write("http_body", name, bytes([mode]) + body)
    # otlp: the first byte says traces (bit 0) and JSON (bit 1); the
    # specification's JSON examples and a request protoc encodes from text.
    examples = os.path.join(HERE, "../integration/otlp")
    for name, mode in (("logs.json", 2), ("traces.json", 3)):
        with open(os.path.join(examples, name), "rb") as f:
            write("otlp", name, bytes([mode]) + f.read())
    with open(os.path.join(examples, "logs.txt"), "rb") as f:
        pb = subprocess.run(["protoc", "--proto_path=" + os.path.join(HERE, "../../proto"),
                             "--encode=opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest",
                             "opentelemetry/proto/collector/logs/v1/logs_service.proto"],
                            input=f.read(), capture_output=True, check=True).stdout
    write("otlp", "logs.pb", bytes([0]) + pb)
    # otlp_depth: a recipe, one byte a nesting step (0 array, 1 kvlist,
    # 2 array of two copies); first byte: bit 0 traces. Either side of the limit.
    for name, recipe in (("logs-flat", b"\0"), ("logs-mixed", b"\0\0\1\2\0\1"), ("logs-at-limit", b"\0" + b"\0" * 14),
                         ("logs-past-limit", b"\0" + b"\0" * 15), ("traces-kvlist", b"\1" + b"\1" * 9),
                         ("traces-past-limit", b"\1" + b"\1" * 10), ("logs-5000", b"\0" + b"\0" * 5000)):
        write("otlp_depth", name, recipe)
    wal_seeds()
    metrics_seeds()
    grpc_seeds()
    remote_write_seeds()
    prom_text_seeds()
    ottl_seeds()
    print("seeds:", {t: len(glob.glob(os.path.join(HERE, "corpus", t, "*"))) for t in TARGETS})


def metrics_seeds():
    """otlp_metrics: the integration test's request of every metric type (protobuf and JSON), and parts of it."""
    proto = os.path.join(ROOT, "proto")
    with open(os.path.join(ROOT, "tests/integration/otlp/metrics.txt"), "rb") as f:
        text = f.read()
    pb = subprocess.run(["protoc", f"--proto_path={proto}",
                         "--encode=opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest",
                         "opentelemetry/proto/collector/metrics/v1/metrics_service.proto"],
                        input=text, capture_output=True, check=True).stdout
    # first byte: bit 0 JSON
    write("otlp_metrics", "every-type.pb", b"\0" + pb)
    write("otlp_metrics", "cut.pb", b"\0" + pb[: len(pb) // 2])
    write("otlp_metrics", "empty.pb", b"\0")
    with open(os.path.join(ROOT, "tests/integration/otlp/metrics.json"), "rb") as f:
        write("otlp_metrics", "every-type.json", b"\1" + f.read())


REMOTE_WRITE = """
timeseries {
  labels { name: "__name__" value: "http_requests_total" }
  labels { name: "job" value: "api" }
  labels { name: "instance" value: "10.0.0.1:9090" }
  samples { value: 42 timestamp: 1700000000000 }
  samples { value: 43 timestamp: 1700000015000 }
}
timeseries {
  labels { name: "__name__" value: "node_load1" }
  labels { name: "a.b" value: "x" }
  labels { name: "" value: "empty name" }
  samples { value: 0.5 timestamp: 1700000000000 }
}
timeseries {
  labels { name: "job" value: "nameless" }
  samples { value: 1 timestamp: 1 }
}
"""


def remote_write_seeds():
    """remote_write: a WriteRequest protoc encodes from text (a counter of two
    samples, a gauge with labels to translate, a series without a name), cut, empty."""
    pb = subprocess.run(["protoc", f"--proto_path={os.path.join(ROOT, 'proto')}", "--encode=prometheus.WriteRequest",
                         "prometheus/remote.proto"], input=REMOTE_WRITE.encode(), capture_output=True,
                        check=True).stdout
    write("remote_write", "three-series.pb", pb)
    write("remote_write", "cut.pb", pb[:30])
    write("remote_write", "empty.pb", b"")


PROM_TEXT = """# HELP http_requests_total The total.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
msdos_file_access_time_seconds{path="C:\\\\DIR",error="Cannot find:\\n\\"F\\""} 1.458255915e9
# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile="0.5"} 4773
rpc_duration_seconds_sum 1.7560473e+07
rpc_duration_seconds_count 2693
# TYPE h histogram
h_bucket{le="0.05"} 24054
h_bucket{le="+Inf"} 144320
h_sum 53423
h_count 144320
nan_gauge NaN
"""
OPENMETRICS = """# TYPE foo counter
# UNIT foo seconds
foo_total 17.0 1520879607.789 # {id="counter-test"} 5
foo_created 1520430000.123
# TYPE s stateset
s{s="a"} 1
# EOF
"""


def ottl_seeds():
    """ottl: the conditions tests/integration/test_ottl.py runs, and its refusals."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests/integration"))
    from test_ottl import CASES, STATEMENTS
    for i, (condition, _) in enumerate(CASES):
        write("ottl", f"case-{i:02d}.txt", condition.encode())
    for i, (statement, _) in enumerate(STATEMENTS):
        write("ottl", f"statement-{i:02d}.txt", (statement if isinstance(statement, str) else statement[-1]).encode())
    for name, text in (("unclosed", b'IsMatch(body, "x'), ("single-equals", b'attributes["a"] = "b"'),
                       ("deep", b"not " * 40 + b"true"), ("list", b'Concat(["a", "b", "c"], ",") == "a,b,c"')):
        write("ottl", f"{name}.txt", text)


def prom_text_seeds():
    """prom_text: the text format's examples (0.0.4) and OpenMetrics' (the first byte's bit 0), and a cut one."""
    write("prom_text", "text.txt", b"\0" + PROM_TEXT.encode())
    write("prom_text", "openmetrics.txt", b"\1" + OPENMETRICS.encode())
    write("prom_text", "cut.txt", b"\0" + PROM_TEXT.encode()[:100])


def grpc_seeds():
    """grpc: first byte bit 0 gzip, bits 1-2 the service; second byte the
    limit in 64s; then a call's body: the metrics request framed plain and
    gzip'd, cut, with a lying prefix, two messages; a RetryInfo detail."""
    pb = open(os.path.join(HERE, "corpus/otlp_metrics/every-type.pb"), "rb").read()[1:]
    def frame(msg, flag=0):
        return bytes([flag]) + len(msg).to_bytes(4, "big") + msg
    zipped = gzip.compress(pb, mtime=0)
    write("grpc", "metrics", b"\x04\xff" + frame(pb))
    write("grpc", "metrics-gzip", b"\x05\xff" + frame(zipped, 1))
    write("grpc", "gzip-without-encoding", b"\x04\xff" + frame(zipped, 1))
    write("grpc", "cut", b"\x04\xff" + frame(pb)[:-7])
    write("grpc", "lying-prefix", b"\x00\xff" + b"\x00\x00\x01\x00\x00" + pb)
    write("grpc", "two-messages", b"\x00\xff" + frame(b"\x0a\x00") + frame(b""))
    write("grpc", "past-limit", b"\x04\x01" + frame(pb))
    write("grpc", "bomb", b"\x05\x10" + frame(gzip.compress(b"\0" * 100000, mtime=0), 1))
    # google.rpc.Status {code 14, message "x", details [Any {RetryInfo {retry_delay {seconds 1, nanos 5e8}}}]}
    retry = b"\x0a\x08\x08\x01\x10" + bytes([0x80, 0xca, 0xb5, 0xee, 0x01])  # nanos 500000000 as a varint
    any_ = b"\x0a\x28type.googleapis.com/google.rpc.RetryInfo\x12" + bytes([len(retry)]) + retry
    status = b"\x08\x0e\x12\x01x\x1a" + bytes([len(any_)]) + any_
    import base64
    write("grpc", "retry-info", b"\x00\x00" + base64.b64encode(status).rstrip(b"="))


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def wal_entry(number, payload, records=1):
    """One write-ahead log entry (worker/wal/drv_wal.h)."""
    body = number.to_bytes(8, "little") + (1700000000000 + number).to_bytes(8, "little") + records.to_bytes(4, "little")
    return len(payload).to_bytes(4, "little") + crc32c(body + payload).to_bytes(4, "little") + body + payload


def wal_seeds():
    """wal: the first byte splits the rest into an older segment and the
    newest, the second chooses the older format's names (1), a spare (2), a
    settled mark (4, at the third byte) or a mark file of garbage (8);
    whole logs, a torn one, a flipped one, a recycled one's older tail."""
    def raw(node, body):
        return bytes([len(node)]) + node + b"\x00" + body

    older = b"".join(wal_entry(n, raw(b"in", msgpack.packb([{"n": n}]))) for n in range(1, 9))
    newest = b"".join(wal_entry(n, raw(b"in", msgpack.packb([{"n": n, "pad": "x" * n}]))) for n in range(9, 14))
    split = round(len(older) * 255 / (len(older) + len(newest)))
    write("wal", "whole", bytes([split, 0, 0]) + older + newest)
    write("wal", "torn", bytes([split, 0, 0]) + older + newest[:-5])
    flipped = bytearray(older)
    flipped[len(flipped) // 2] ^= 0x40
    write("wal", "flipped", bytes([split, 0, 0]) + bytes(flipped) + newest)
    write("wal", "newest-only", b"\x00\x00\x00" + newest)
    write("wal", "old-format", bytes([split, 1, 0]) + older + newest[:-5])
    write("wal", "spare-and-mark", bytes([split, 2 | 4, 10]) + older + newest)
    write("wal", "garbage-mark", bytes([split, 8, 0]) + older + newest)
    stale = b"".join(wal_entry(n, raw(b"in", msgpack.packb([{"old": n}]))) for n in range(2, 6))
    write("wal", "recycled-tail", bytes([split, 0, 0]) + older + newest + stale)


if __name__ == "__main__":
    main()
