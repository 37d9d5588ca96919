"""exporter:prometheus_remote_write (docs/operations.md, "Prometheus remote
write"; issue 51) through the real binaries, into Debian's prometheus 2.42
started with --web.enable-remote-write-receiver and read back with PromQL
from its HTTP API: OTLP gauges, sums, histograms and summaries posted to
receiver:otlp arrive named and labelled as OpenTelemetry's Prometheus
compatibility specification says (unit and _total suffixes, job and
instance from the resource, target_info with its other attributes,
_bucket/_sum/_count); a delta sum and a log record are given up, counted;
Prometheus stopped for a while and started again on the same storage
loses nothing; receiver:hostmetrics's figures arrive too. And the other
way: Debian's prometheus scraping Debian's prometheus-node-exporter
remote-writes into receiver:prometheus_remote_write, its samples arrive as
metric records with their labels while Prometheus counts none failed; a
snappy bomb, garbage and a wrong type are refused."""

import json
import time
import unittest

from harness import EngineTest, curl_post, free_port, wait_until
from prometheus import OrderSink, Prometheus


def attrs(**kv):
    return [{"key": k.replace("_", "."), "value": {"stringValue": v}} for k, v in kv.items()]


def request(metrics, ns, resource=None):
    resource = {"host_name": "h1"} if resource is None else resource
    return json.dumps({"resourceMetrics": [{
        "resource": {"attributes": attrs(service_name="shop", service_namespace="prod", service_instance_id="i-1",
                                         **resource)},
        "scopeMetrics": [{"scope": {"name": "test"}, "metrics": metrics}]}]}).encode()


def point(ns, **extra):
    return dict({"timeUnixNano": str(ns), "startTimeUnixNano": str(ns - 60 * 10**9)}, **extra)


class RemoteWrite(EngineTest):
    def setUp(self):
        self.prometheus = Prometheus()
        self.addCleanup(self.prometheus.close)
        self.start_admin_engine()
        self.otlp = free_port()

    def put(self, extra_nodes=None):
        nodes = {"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.otlp}"}, "to": ["rw"]},
                 "rw": {"type": "exporter:prometheus_remote_write", "config": {
                     "endpoint": self.prometheus.url("/api/v1/write"), "batch": {"max_delay_ms": 50},
                     "retry": {"initial_ms": 100, "max_ms": 500, "max_elapsed_secs": 0}}}}
        nodes.update(extra_nodes or {})
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/m",
                                          body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
        self.assertEqual(status, 200, body)

    def post(self, metrics, ns, resource=None):
        status, body, _, _ = curl_post(self.otlp, "/v1/metrics", request(metrics, ns, resource), "application/json")
        self.assertEqual(status, 200, body)

    def one(self, promql):
        return wait_until(lambda: (lambda r: r if len(r) == 1 else None)(self.prometheus.query(promql)), 20,
                          f"{promql} in prometheus")[0]

    def node(self):
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/m/status")
        return ((body.get("instances") or [{}])[0].get("nodes") or {}).get("rw", {})

    def test_every_metric_type_arrives_named_and_labelled_as_the_spec_says(self):
        self.put()
        ns = time.time_ns() - 5 * 10**9
        self.post([
            {"name": "queue.depth", "unit": "{item}", "gauge": {"dataPoints": [point(ns, asInt="7",
                                                                                     attributes=attrs(queue="q1"))]}},
            {"name": "memory.used", "unit": "By", "gauge": {"dataPoints": [point(ns, asDouble=1.5e9)]}},
            {"name": "cpu.utilization", "unit": "1", "gauge": {"dataPoints": [point(ns, asDouble=0.25)]}},
            {"name": "http.server.requests", "unit": "{request}", "sum": {
                "aggregationTemporality": 2, "isMonotonic": True,
                "dataPoints": [point(ns, asInt="42", attributes=attrs(http_route="/a"))]}},
            {"name": "pool.size", "unit": "", "sum": {"aggregationTemporality": 2, "isMonotonic": False,
                                                      "dataPoints": [point(ns, asInt="3")]}},
            {"name": "http.server.duration", "unit": "ms", "histogram": {
                "aggregationTemporality": 2, "dataPoints": [point(ns, count="6", sum=500.0, explicitBounds=[10, 100],
                                                                  bucketCounts=["1", "2", "3"])]}},
            {"name": "rpc.latency", "unit": "s", "summary": {"dataPoints": [point(
                ns, count="4", sum=2.0, quantileValues=[{"quantile": 0.5, "value": 0.4},
                                                        {"quantile": 0.99, "value": 0.9}])]}},
            {"name": "deltas", "unit": "", "sum": {"aggregationTemporality": 1, "isMonotonic": True,
                                                   "dataPoints": [point(ns, asInt="1")]}},
        ], ns)
        labels, value = self.one('queue_depth{queue="q1"}')
        self.assertEqual(value, 7)
        self.assertEqual((labels["job"], labels["instance"]), ("prod/shop", "i-1"))
        self.assertEqual(self.one("memory_used_bytes")[1], 1.5e9)
        self.assertEqual(self.one("cpu_utilization_ratio")[1], 0.25)
        self.assertEqual(self.one('http_server_requests_total{http_route="/a"}')[1], 42)
        self.assertEqual(self.one("pool_size")[1], 3, "a non-monotonic sum is a gauge: no _total")
        buckets = {s[0]["le"]: s[1] for s in wait_until(lambda: (lambda r: r if len(r) == 3 else None)(
            self.prometheus.query("http_server_duration_milliseconds_bucket")), 20, "the buckets")}
        self.assertEqual(buckets, {"10": 1, "100": 3, "+Inf": 6}, "cumulative, +Inf the count")
        self.assertEqual(self.one("http_server_duration_milliseconds_sum")[1], 500)
        self.assertEqual(self.one("http_server_duration_milliseconds_count")[1], 6)
        self.assertEqual(self.one('rpc_latency_seconds{quantile="0.99"}')[1], 0.9)
        self.assertEqual(self.one("rpc_latency_seconds_count")[1], 4)
        info, value = self.one("target_info")
        self.assertEqual((info["host_name"], info["job"], info["instance"], value), ("h1", "prod/shop", "i-1", 1))
        self.assertNotIn("service_name", info)
        self.assertEqual(self.prometheus.query("deltas") + self.prometheus.query("deltas_total"), [])
        node = wait_until(lambda: (lambda n: n if n.get("errors") == 1 else None)(self.node()), 10,
                          "the delta sum given up, counted")
        self.assertEqual(node.get("records_in"), node.get("records_out") + 1, node)
        self.engine.wait_log(r"a delta sum or histogram: Prometheus holds cumulative ones only", 10)

    def test_prometheus_stopped_for_a_while_loses_nothing(self):
        self.put()
        base = time.time_ns() - 30 * 10**9
        self.post([{"name": "ticks", "unit": "", "sum": {"aggregationTemporality": 2, "isMonotonic": True,
                                                         "dataPoints": [point(base, asInt="1")]}}], base)
        self.one("ticks_total")
        self.prometheus.stop()
        for k in range(1, 6):  # posted while prometheus is down: held, retried
            ns = base + k * 10**9
            self.post([{"name": "ticks", "unit": "", "sum": {"aggregationTemporality": 2, "isMonotonic": True,
                                                             "dataPoints": [point(ns, asInt=str(k + 1))]}}], ns)
        wait_until(lambda: self.node().get("retries", 0) >= 1, 20, "the exporter retrying")
        self.prometheus.start()
        got = wait_until(lambda: (lambda r: r if r and r[0][1] == 6 else None)(
            self.prometheus.query("count_over_time(ticks_total[5m])")), 30, "all six samples once it is back")
        self.assertEqual(got[0][1], 6)
        self.assertEqual(self.one("ticks_total")[1], 6)
        self.assertEqual(self.node().get("errors", 0), 0)

    def test_series_sharded_over_lanes_reach_prometheus_in_order(self):
        # Small batches, several in flight (a lane each): a series' samples
        # must still reach Prometheus oldest first, which answers 400 to an
        # older sample than it holds (the whole request lost).
        self.put_sharded(self.prometheus.url("/api/v1/write"))
        base, steps, series = time.time_ns() - 60 * 10**9, 30, 40
        self.post_steps(base, steps, series)
        got = wait_until(lambda: (lambda r: r if len(r) == series and all(v == steps for _, v in r) else None)(
            self.prometheus.query("count_over_time(shards[5m])")), 30, "every sample of every series")
        self.assertEqual(len(got), series)
        node = wait_until(lambda: (lambda n: n if n.get("records_out") == steps * series else None)(self.node()), 10,
                          "every record counted out")
        self.assertEqual(node.get("errors", 0), 0, node)

    def test_no_series_is_in_two_requests_at_once(self):
        # A backend that answers slowly (and now and then 503): requests
        # overlap, yet never two holding one series, and each series'
        # samples arrive in time order, retries included.
        sink = OrderSink()
        self.addCleanup(sink.close)
        self.put_sharded(sink.url)
        base, steps, series = time.time_ns() - 60 * 10**9, 30, 40
        self.post_steps(base, steps, series)
        wait_until(lambda: sink.samples() == steps * series, 60, "every sample at the sink")
        self.assertEqual(sink.overlaps, [], "a series in two requests in flight at once")
        self.assertEqual(sink.out_of_order, [], "a series' samples out of time order")
        self.assertGreater(sink.most_at_once, 1, "requests overlapped (else this proves nothing)")
        self.assertGreater(sink.refused, 0)

    def put_sharded(self, url):
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/m", body={"pipeline": {
            "cores": {"count": 1}, "nodes": {
                "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.otlp}"}, "to": ["rw"]},
                "rw": {"type": "exporter:prometheus_remote_write", "config": {
                    "endpoint": url, "batch": {"max_samples": 25, "max_delay_ms": 5},
                    "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}}}}}}, timeout=30)
        self.assertEqual(status, 200, body)

    def post_steps(self, base, steps, series):
        # A resource of service.* alone (no target_info): its series are
        # sharded one by one, not as the resource's.
        for k in range(steps):
            ns = base + k * 10**9
            self.post([{"name": "shards", "unit": "", "gauge": {"dataPoints": [
                point(ns, asInt=str(k), attributes=attrs(s=str(i))) for i in range(series)]}}], ns, {})

    def test_host_metrics_reach_prometheus(self):
        self.put({"host": {"type": "receiver:hostmetrics", "config": {"interval_secs": 1, "scrapers": ["cpu", "memory"]},
                           "to": ["rw"]}})
        wait_until(lambda: self.prometheus.query('system_cpu_time_seconds_total{state="idle"}'), 20,
                   "cpu time in prometheus")
        memory = wait_until(lambda: self.prometheus.query("system_memory_usage_bytes"), 20, "memory in prometheus")
        self.assertEqual({m[0]["state"] for m in memory},
                         {"used", "free", "buffered", "cached", "slab_reclaimable", "slab_unreclaimable"})


def snappy_literal(data):
    """data as a raw snappy block of literals (no compression): a varint of
    its length, then literal chunks of at most 60 bytes."""
    out, n = bytearray(), len(data)
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    for at in range(0, len(data), 60):
        chunk = data[at:at + 60]
        out.append((len(chunk) - 1) << 2)
        out += chunk
    return bytes(out)


def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def write_request(series):
    """A WriteRequest of series [([(name, value)...], [(value, ms)...])]."""
    import struct
    body = b""
    for labels, samples in series:
        ts = b"".join(field(1, field(1, n.encode()) + field(2, v.encode())) for n, v in labels)
        ts += b"".join(field(2, b"\x09" + struct.pack("<d", v) + b"\x10" + varint(ms)) for v, ms in samples)
        body += field(1, ts)
    return body


class RemoteWriteIn(EngineTest):
    """receiver:prometheus_remote_write, fed by Debian's prometheus scraping
    Debian's prometheus-node-exporter (two peers nobody here wrote)."""

    def setUp(self):
        self.start_admin_engine()
        self.port = free_port()
        nodes = {"in": {"type": "receiver:prometheus_remote_write", "config": {"endpoint": f"127.0.0.1:{self.port}"},
                        "to": ["out"]},
                 "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out.ndjson"}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/rw",
                                          body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
        self.assertEqual(status, 200, body)

    def rows(self):
        from harness import read_ndjson
        return read_ndjson(f"{self.engine.out_dir}/out.ndjson")

    def test_prometheus_scraping_node_exporter_writes_into_drover(self):
        import subprocess
        exporter_port = free_port()
        exporter = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{exporter_port}",
                                     "--collector.disable-defaults", "--collector.cpu", "--collector.meminfo",
                                     "--collector.loadavg"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (exporter.kill(), exporter.wait()))
        prometheus = Prometheus(
            scrape_configs=[{"job_name": "node", "scrape_interval": "1s",
                             "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
            remote_write=[{"url": f"http://127.0.0.1:{self.port}/api/v1/write",
                           "queue_config": {"batch_send_deadline": "1s", "min_backoff": "100ms"}}])
        self.addCleanup(prometheus.close)

        def cpu():
            return [r for r in self.rows() if r.get("name") == "node_cpu_seconds_total"] or None
        rows = wait_until(cpu, 60, "node_cpu_seconds_total from node-exporter, through prometheus")
        row = rows[0]
        self.assertEqual((row["signal"], row["type"], row["is_monotonic"], row["aggregation_temporality"]),
                         ("metric", "sum", True, 2))
        self.assertEqual((row["attributes"]["job"], row["attributes"]["instance"]),
                         ("node", f"127.0.0.1:{exporter_port}"))
        self.assertEqual({"cpu", "mode"} <= set(row["attributes"]), True)
        self.assertNotIn("__name__", row["attributes"])
        self.assertGreater(row["time_unix_nano"], 10**18)
        gauges = [r for r in self.rows() if r.get("name") == "node_load1"]
        self.assertTrue(gauges and gauges[0]["type"] == "gauge")
        #  Prometheus' own view of it: sent, and none failed.
        import urllib.request

        def counter(name):
            with urllib.request.urlopen(prometheus.url("/metrics"), timeout=10) as r:
                text = r.read().decode()
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith(name + "{") or line.startswith(name + " "))
        wait_until(lambda: counter("prometheus_remote_storage_samples_total") > 0, 20, "prometheus counting samples")
        self.assertEqual(counter("prometheus_remote_storage_samples_failed_total"), 0)

    def test_prometheus_loses_nothing_through_pushback_a_replace_and_a_kill(self):
        """Stock Prometheus (no retry_on_http_429) remote-writing node
        exporter's samples: pushed back (503) while an exporter is stuck,
        then through a replace and a SIGKILL of the instance, every sample
        it holds reaches drover and it counts none failed."""
        import os
        import signal
        import subprocess

        from capture import Capture
        exporter_port = free_port()
        exporter = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{exporter_port}",
                                     "--collector.disable-defaults", "--collector.loadavg"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (exporter.kill(), exporter.wait()))
        stuck = Capture()
        stuck.gate.clear()
        self.addCleanup(stuck.gate.set)
        out = f"{self.engine.out_dir}/out.ndjson"

        def put(buffered, max_body):
            spec = {"cores": {"count": 1}, "nodes": {
                "in": {"type": "receiver:prometheus_remote_write",
                       "config": {"endpoint": f"127.0.0.1:{self.port}", "max_body_bytes": max_body},
                       "to": ["out", "stuck"]},
                "out": {"type": "exporter:file", "config": {"path": out}},
                "stuck": {"type": "exporter:http", "config": {
                    "endpoint": stuck.url(), "queue": {"max_bytes": 1024, "when_full": "block"},
                    "batch": {"max_delay_ms": 20}, "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}}}}}
            if buffered:
                spec["policies"] = {"buffer": {"type": "disk", "sync": "batch", "sync_interval_ms": 20}}
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/rw",
                                              body={"pipeline": spec}, timeout=60)
            self.assertEqual(status, 200, body)
        put(False, 4194304)
        prometheus = Prometheus(
            scrape_configs=[{"job_name": "node", "scrape_interval": "1s",
                             "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
            remote_write=[{"url": f"http://127.0.0.1:{self.port}/api/v1/write", "queue_config": {
                "batch_send_deadline": "1s", "min_backoff": "100ms", "max_backoff": "1s"}}])
        self.addCleanup(prometheus.close)

        def up_in_drover():
            return {r["time_unix_nano"] // 10**6 for r in self.rows()
                    if r.get("name") == "up" and r["attributes"].get("job") == "node"}
        wait_until(lambda: prometheus.counter("prometheus_remote_storage_samples_retried_total") > 0, 60,
                   "prometheus pushed back and retrying")
        stuck.gate.set()
        wait_until(lambda: len(up_in_drover()) >= 3, 60, "samples flowing again")
        put(True, 8388608)  # a replace, now with a disk buffer
        wait_until(lambda: len(up_in_drover()) >= 6, 60, "samples after the replace")
        (pid,) = self.engine.instances().values()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: self.engine.instances() and pid not in self.engine.instances().values(), 30,
                   "the instance restarted")
        held = prometheus.stamps('up{job="node"}')
        missing = wait_until(lambda: (lambda m: m if not m[1] else None)((held, held - up_in_drover())), 60,
                             "every sample prometheus holds, in drover")
        self.assertEqual(missing[1], set())
        self.assertGreaterEqual(len(held), 6)
        self.assertEqual(prometheus.counter("prometheus_remote_storage_samples_failed_total"), 0)

    def test_a_snappy_bomb_garbage_and_the_wrong_type_are_refused(self):
        url = f"http://127.0.0.1:{self.port}/api/v1/write"
        import urllib.error
        import urllib.request

        def post(body, ctype="application/x-protobuf", encoding="snappy"):
            req = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": ctype, "Content-Encoding": encoding})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as e:
                return e.code, e.read()
        bomb = bytes([0x80, 0x80, 0x80, 0x80, 0x04]) + b"\x00a"  # claims 1 GiB
        status, body = post(bomb)
        self.assertEqual(status, 413, body)
        self.assertIn(b"once decompressed", body)
        status, body = post(b"\x05\xff\xff\xff")  # claims 5 bytes; what follows is no snappy
        self.assertEqual(status, 400, body)
        status, body = post(snappy_literal(b"\x0a\x05\x0a\x03\xff\xff"))  # a series whose label is cut short
        self.assertEqual(status, 400, body)
        self.assertIn(b"WriteRequest", body)
        self.assertEqual(post(snappy_literal(b""), ctype="text/plain")[0], 415)
        self.assertEqual(post(snappy_literal(b""), encoding="br")[0], 415)
        #  An empty request is a request: 204, nothing made of it.
        self.assertEqual(post(snappy_literal(b""))[0], 204)
        #  A series of 129 labels: refused whole; a name twice: the first stands.
        many = [("__name__", "wide")] + [(f"l{i}", "v") for i in range(128)]
        status, body = post(snappy_literal(write_request([(many, [(1.0, 1700000000000)])])))
        self.assertEqual(status, 400, body)
        self.assertIn(b"129 labels", body)
        twice = [("__name__", "dup_total"), ("job", "first"), ("job", "second"), ("", "nameless")]
        self.assertEqual(post(snappy_literal(write_request([(twice, [(5.0, 1700000000000)])])))[0], 204)
        row = wait_until(lambda: [r for r in self.rows() if r.get("name") == "dup_total"], 10, "the record")[0]
        self.assertEqual((row["attributes"], row["value"], row["type"]), ({"job": "first"}, 5.0, "sum"))

    def test_a_million_series_a_label_too_long_and_a_drip_hold_no_memory(self):
        """A million series (30 MB once decompressed) and 220,000 samples in
        4 MB are refused (413) with the instance's memory flat; a label value
        of 100 KB is refused (400); a sender dripping its body a byte at a
        time holds only what it sent, and nobody waits for it."""
        import socket
        import threading

        import snappy  # Debian's python3-snappy
        from hostile import SANITIZED, rss_kb

        def post(raw):
            # The answer may come before the body is all sent (a 413 from
            # the length snappy claims): read it whatever sending met.
            import http.client
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                try:
                    conn.request("POST", "/api/v1/write", body=snappy.compress(raw), headers={
                        "Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"})
                except (BrokenPipeError, ConnectionResetError):
                    pass
                r = conn.getresponse()
                return r.status, r.read()
            finally:
                conn.close()
        (pid,) = self.engine.instances().values()
        self.assertEqual(post(write_request([([("__name__", "warm")], [(1.0, 1700000000000)])]))[0], 204)
        before = rss_kb(pid)
        one = field(2, b"\x09" + b"\x00" * 8 + b"\x10" + varint(1700000000000))
        million = b"".join(field(1, field(1, field(1, b"__name__") + field(2, b"m")) +
                                 field(1, field(1, b"s") + field(2, str(i).encode())) + one)
                           for i in range(1_000_000))
        status, body = post(million)
        self.assertEqual(status, 413, body)
        self.assertRegex(body, rb"larger than 4194304 bytes|once decompressed")
        many = field(1, field(1, field(1, b"__name__") + field(2, b"many")) + one * 220_000)
        self.assertLess(len(many), 4 << 20)
        status, body = post(many)
        self.assertEqual(status, 413, body)
        self.assertIn(b"220000 samples in one request", body)
        status, body = post(write_request([([("__name__", "long"), ("l", "x" * 100_000)], [(1.0, 1700000000000)])]))
        self.assertEqual(status, 400, body)
        self.assertIn(b"label name or value of 100000 bytes", body)
        #  The drip: a body of 1 MB declared, a byte every 20 ms for 2 s.
        drip = socket.create_connection(("127.0.0.1", self.port))
        self.addCleanup(drip.close)
        drip.sendall(f"POST /api/v1/write HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                     f"Content-Encoding: snappy\r\nContent-Length: 1000000\r\n\r\n".encode())
        stop = threading.Event()

        def dribble():
            while not stop.wait(0.02):  # the drip itself: what the test sends, not a synchronisation
                try:
                    drip.sendall(b"\x00")
                except OSError:
                    return
        threading.Thread(target=dribble, daemon=True).start()
        self.addCleanup(stop.set)
        status, _ = post(write_request([([("__name__", "meanwhile")], [(2.0, 1700000000000)])]))
        self.assertEqual(status, 204, "a good sender is answered while another drips")
        wait_until(lambda: [r for r in self.rows() if r.get("name") == "meanwhile"], 10, "its sample")
        stop.set()
        refused = wait_until(lambda: (lambda s: s if s.get("errors", 0) >= 3 else None)(self.in_node()), 10,
                             "the refusals counted")
        self.assertEqual(refused["errors"], 3, "the million, the samples, the label (a drip cut short is no refusal)")
        if not SANITIZED:  # ASan keeps what is freed in its quarantine: RSS says nothing there
            self.assertLess(rss_kb(pid) - before, 24 * 1024, "what was refused is not held")

    def in_node(self):
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/rw/status")
        return ((body.get("instances") or [{}])[0].get("nodes") or {}).get("in", {})


if __name__ == "__main__":
    unittest.main()
