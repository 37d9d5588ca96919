"""exporter:http through the real binaries, posting to a local HTTP server
that keeps what it gets: every format arrives whole with its headers; 503,
429 and 502 are retried (Retry-After honoured) and nothing is lost; a 400
drops the batch and counts it; a backend that stops answering makes the
receivers push back with 429; HTTPS with a CA file or without checking."""

import json
import os
import re
import signal
import subprocess
import unittest

import msgpack

from capture import Capture, self_signed_cert
from harness import BIN, Admin, EngineTest, children_of, cmdline, curl_post, engine_yaml, free_port, wait_until


def ndjson(body):
    return [json.loads(line) for line in body.decode().splitlines() if line]


class HttpExporter(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 100\n")  # counters fresh in /metrics
        self.captures = []

    def tearDown(self):
        for capture in self.captures:
            capture.close()

    def capture(self, *args, **kw):
        capture = Capture(*args, **kw)
        self.captures.append(capture)
        return capture

    def put(self, name, exporter, source=None):
        source = source or {"type": "receiver:generator", "config": {"rate": 0, "count": 100, "record": {"m": "x"}}}
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {**source, "to": ["out"]}, "out": {"type": "exporter:http", "config": exporter}}}}
        status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec)
        self.assertEqual(status, 200, body)

    def errors(self, pipeline):
        _, text, _ = self.admin.http("GET", "/metrics")
        return sum(int(float(m)) for m in re.findall(
            r'drover_instance_errors_total\{[^}]*pipeline="%s"[^}]*\} (\S+)' % pipeline, text))

    def seqs(self, capture):
        return sorted(r["seq"] for body in capture.bodies() for r in ndjson(body))

    def test_every_format_arrives_whole_with_its_headers(self):
        capture = self.capture()
        for fmt in ("ndjson", "json", "msgpack"):
            for compression in ("gzip", "none"):
                self.put(f"{fmt}-{compression}", {"endpoint": capture.url(f"/in/{fmt}/{compression}"), "format": fmt,
                                                   "compression": compression, "batch": {"max_records": 30},
                                                   "headers": {"Authorization": "Bearer s3cret", "X-Tenant": "a b"}})
        decode = {"ndjson": ndjson, "json": json.loads, "msgpack": lambda b: msgpack.unpackb(b, raw=False)}
        types = {"ndjson": "application/x-ndjson", "json": "application/json", "msgpack": "application/msgpack"}

        def arrived():
            with capture.lock:
                got = {}
                for r in capture.accepted:
                    got.setdefault(r.path, []).extend(decode[r.path.split("/")[2]](r.body))
            return got if len(got) == 6 and all(len(v) >= 100 for v in got.values()) else None

        got = wait_until(arrived, 15, "100 records at each of 6 endpoints")
        for path, records in got.items():
            self.assertEqual(sorted(r["seq"] for r in records), list(range(100)), path)
            self.assertEqual({r["m"] for r in records}, {"x"})
        for r in capture.accepted:
            fmt, compression = r.path.split("/")[2:4]
            self.assertEqual(r.headers["Content-Type"], types[fmt])
            self.assertEqual(r.headers.get("Content-Encoding"), "gzip" if compression == "gzip" else None)
            self.assertEqual((r.headers["Authorization"], r.headers["X-Tenant"]), ("Bearer s3cret", "a b"))
            self.assertLessEqual(len(decode[fmt](r.body)), 30, "batch.max_records")

    def test_503_429_502_are_retried_honouring_retry_after_and_nothing_is_lost(self):
        capture = self.capture([(503, {"Retry-After": "1"}, b"busy"), (429, {}, b"slow down"), (502, {}, b"")])
        self.put("p", {"endpoint": capture.url("/in"), "batch": {"max_records": 10},
                       "retry": {"initial_ms": 50, "max_ms": 200}})
        wait_until(lambda: self.seqs(capture) == list(range(100)), 15, "all 100 records accepted once")
        with capture.lock:
            requests = list(capture.requests)
        self.assertEqual(len(requests), 13, "10 batches, 3 of them twice")
        first = requests[0]
        retry = next(r for r in requests[1:] if r.raw == first.raw)
        self.assertGreaterEqual(retry.at - first.at, 0.9, "Retry-After: 1 honoured")
        # Warnings are limited to one per node per 5 s, and batches are in
        # flight together: whichever failure answered first is the one logged.
        self.engine.wait_log(r"export failed node=out records=10 reason=\".*answered (503: busy|429: slow down|502)")
        # Retried and delivered: no error (errors are records given up), three retries.
        self.assertEqual(self.errors("p"), 0, "a retried batch is not an error")
        _, text, _ = self.admin.http("GET", "/metrics")
        self.assertEqual(sum(int(float(m)) for m in re.findall(
            r'drover_exporter_retries_total\{[^}]*pipeline="p"[^}]*\} (\S+)', text)), 3)

    def test_a_400_drops_the_batch_counts_it_and_the_rest_flows(self):
        capture = self.capture([(400, {}, b"bad field \"x\"\nsecond line")])
        self.put("p", {"endpoint": capture.url("/in"), "batch": {"max_records": 10}})
        wait_until(lambda: len(self.seqs(capture)) == 90 and self.errors("p") == 10, 15, "90 accepted, 10 dropped")
        self.assertEqual(len(capture.requests), 10, "the refused batch is not retried")
        self.engine.wait_log(r"export failed node=out records=10 reason=\"http://127\.0\.0\.1:\d+/in answered 400: "
                             r"bad field 'x' second line\"")

    def http_source(self, port, ack):
        return {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}", "ack": ack}}

    OTLP_LOG = b'{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"n1"}}]}]}]}'

    def post_while_the_backend_holds(self, kind, ack):
        """A pipeline kind -> exporter:http whose backend holds its answer;
        curl posts one request. Returns (curl still waiting 1 s after the
        backend got the records, curl's body and status once released)."""
        capture, port = self.capture(), free_port()
        capture.gate.clear()
        path, ctype, body = (("/v1/logs", "application/json", self.OTLP_LOG) if kind == "receiver:otlp" else
                             ("/", "application/x-ndjson", b'{"n": 1}\n{"n": 2}\n'))
        self.put(f"{kind.split(':')[1]}-{ack}".lower(), {"endpoint": capture.url("/in"), "batch": {"max_delay_ms": 0}},
                 {"type": kind, "config": {"endpoint": f"127.0.0.1:{port}", "ack": ack}})
        client = subprocess.Popen(["curl", "-sS", "-o", "/dev/stdout", "-w", "\n%{http_code}", "-H",
                                   f"Content-Type: {ctype}", "--data-binary", "@-", f"http://127.0.0.1:{port}{path}"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        client.stdin.write(body)
        client.stdin.close()
        try:
            wait_until(lambda: capture.requests, 10, "the records posted downstream")
            try:
                client.wait(timeout=1.0)  # the assertion: does drover answer while the backend holds?
                waiting = False
            except subprocess.TimeoutExpired:
                waiting = True
            capture.gate.set()
            out = client.stdout.read().decode()
            client.wait(timeout=10)
        finally:
            client.kill()
        return waiting, out.split("\n"), capture

    def test_with_ack_a_request_is_answered_only_once_its_records_are_accepted_downstream(self):
        for kind, answer in (("receiver:http", '{"accepted":2}'), ("receiver:otlp", "{}")):
            waiting, out, capture = self.post_while_the_backend_holds(kind, True)
            self.assertTrue(waiting, f"{kind} answered before the backend accepted the records")
            self.assertEqual(out, [answer, "200"], kind)
            self.assertEqual(len(ndjson(capture.accepted[0].body)), 2 if kind == "receiver:http" else 1)
        # and the check can fail: without ack the answer does not wait
        waiting, out, _ = self.post_while_the_backend_holds("receiver:http", False)
        self.assertFalse(waiting, "ack: false answers as soon as the instance took the records")
        self.assertEqual(out, ['{"accepted":2}', "200"])

    def test_a_backend_that_stops_answering_makes_the_receiver_push_back_with_429(self):
        capture, port = self.capture(), free_port()
        capture.gate.clear()
        self.put("p", {"endpoint": capture.url("/in"), "batch": {"max_records": 1}, "queue": {"max_bytes": 1024}},
                 self.http_source(port, False))
        statuses = []
        for n in range(100):
            status, body, _, head = curl_post(port, "/", b'{"n": %d, "pad": "%s"}' % (n, b"x" * 100),
                                              "application/x-ndjson")
            statuses.append(status)
            if status != 200:
                break
        self.assertEqual(status, 429, body)
        self.assertIn("exporters are behind", body.decode())
        self.assertRegex(head, r"(?i)retry-after: 1")
        accepted = statuses.count(200)
        # bounded: the posts in flight and a queue of 1 KiB (a record of over 100 bytes a batch), never more
        self.assertLessEqual(accepted, 4 + 1024 // 100 + 1)
        capture.gate.set()
        wait_until(lambda: len(capture.bodies()) == accepted, 15, f"the {accepted} accepted records delivered")
        self.assertEqual(sorted(ndjson(b)[0]["n"] for b in capture.bodies()), list(range(accepted)))
        wait_until(lambda: curl_post(port, "/", b'{"n": -1}', "application/x-ndjson")[0] == 200, 10,
                   "accepted again once the backend answers")

    @staticmethod
    def rx_queue(server_port, client_port):
        """Bytes waiting unread in the receive queue of the server's end of a
        loopback TCP connection (from /proc/net/tcp)."""
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, remote, queues = fields[1], fields[2], fields[4]
                if local.endswith(":%04X" % server_port) and remote.endswith(":%04X" % client_port):
                    return int(queues.split(":")[1], 16)
        return 0

    def records_in(self, pipeline):
        _, text, _ = self.admin.http("GET", "/metrics")
        return sum(int(float(m)) for m in re.findall(
            r'drover_instance_records_in_total\{[^}]*pipeline="%s"[^}]*\} (\S+)' % pipeline, text))

    def test_syslog_over_tcp_is_not_read_while_the_backend_stalls(self):
        import socket
        import time
        capture, port = self.capture(), free_port()
        capture.gate.clear()
        self.put("p", {"endpoint": capture.url("/in"), "batch": {"max_records": 10, "max_delay_ms": 0},
                       "queue": {"max_bytes": 16384}},
                 {"type": "receiver:syslog", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}})
        sender = socket.create_connection(("127.0.0.1", port))
        total = 20000
        lines = [b"<13>1 2026-11-23T10:00:00Z h app - - - message %d\n" % n for n in range(total)]
        sender.sendall(b"".join(lines[:300]))  # 30 batches: 4 posted and held, the rest in a 16 KiB queue (about 40 bytes a record)
        wait_until(lambda: len(capture.requests) == 4, 10, "4 posts held by the backend")
        wait_until(lambda: self.records_in("p") >= 300, 10, "the first 300 messages taken")
        sender.setblocking(False)
        pending = b"".join(lines[300:])
        # Not read: what is offered now stays in the kernel's receive queue of
        # the instance's end of the connection (/proc/net/tcp rx_queue).
        local = sender.getsockname()[1]

        def offered_and_unread():
            nonlocal pending
            try:
                pending = pending[sender.send(pending):]
            except BlockingIOError:
                pass
            return self.rx_queue(port, local) >= 50000
        wait_until(offered_and_unread, 10, "50 kB waiting unread in the instance's receive queue")
        # The assertion covers a window: over a second (ten heartbeats) the
        # instance takes no more than what one read can hold.
        window_ends = time.monotonic() + 1.0
        while time.monotonic() < window_ends:
            self.assertLess(self.records_in("p"), 1000, "read while its exporter is backlogged")
            time.sleep(0.05)
        capture.gate.set()
        sender.setblocking(True)
        sender.sendall(pending)
        sender.close()
        wait_until(lambda: sum(len(ndjson(b)) for b in capture.bodies()) == total, 60,
                   "every message once the backend answers")
        got = sorted(int(r["message"].split()[1]) for b in capture.bodies() for r in ndjson(b))
        self.assertEqual(got, list(range(total)))

    def test_https_with_a_ca_file_or_without_verifying_and_refused_otherwise(self):
        cert, key = self_signed_cert(self.engine.out_dir)
        capture = self.capture(certfile=cert, keyfile=key)
        self.put("ca", {"endpoint": capture.url("/ca"), "tls": {"ca_file": cert}})
        self.put("insecure", {"endpoint": capture.url("/insecure"), "tls": {"insecure_skip_verify": True}})
        self.put("unverified", {"endpoint": capture.url("/unverified"), "retry": {"initial_ms": 1000}})

        def seqs(path):
            return sorted(r["seq"] for q in list(capture.accepted) if q.path == path for r in ndjson(q.body))

        wait_until(lambda: seqs("/ca") == list(range(100)) and seqs("/insecure") == list(range(100)), 15,
                   "every record over HTTPS")
        self.engine.wait_log(r"export failed node=out records=100 reason=\"https://127\.0\.0\.1:\d+/unverified: "
                             r"SSL peer certificate or SSH remote key was not OK")
        self.assertEqual(seqs("/unverified"), [])
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/bad", body={"pipeline": {
            "nodes": {"in": {"type": "receiver:generator", "to": ["out"]}, "out": {"type": "exporter:http", "config": {
                "endpoint": "ftp://x", "tls": {"ca_file": "rel.pem", "verify": True},
                "batch": {"max_records": 0}, "retry": {"initial_ms": 10, "max_ms": 5},
                "headers": {"Bad Name": "x", "X-Ok": "a\r\nInjected: 1", "Content-Type": "text/plain"}}}}}})
        self.assertEqual(status, 422, body)
        messages = sorted(p["message"] for p in body["error"]["details"])
        for expected in ("config.endpoint: must be an http:// or https:// URL",
                         "config.tls.ca_file: must be an absolute path",
                         "config.tls.verify: unknown key (ca_file, insecure_skip_verify)",
                         "config.batch.max_records: must be an integer from 1 to 1000000",
                         "config.retry.max_ms: must be at least initial_ms",
                         'config.headers: "Bad Name" is not a header name',
                         "config.headers.X-Ok: control characters are not allowed",
                         "config.headers.Content-Type: set by the exporter itself"):
            self.assertIn(expected, messages)

    def test_ack_mode_loses_no_acknowledged_record_when_the_instance_or_the_broker_is_killed(self):
        capture, port = self.capture(), free_port()
        self.put("p", {"endpoint": capture.url("/in"), "batch": {"max_records": 100, "max_delay_ms": 5}},
                 {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}", "ack": True}})
        self.engine.wait_log(r"instance connected instance=default/p@1#0")
        producer = subprocess.Popen([os.path.join(BIN, "drover-produce"), f"tcp://127.0.0.1:{port}", "2000", "10",
                                     "20000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: len(self.seqs(capture)) > 3000, 20, "acknowledged traffic flowing")
            os.kill(self.engine.instances()["default/p@1#0"], signal.SIGKILL)
            self.engine.wait_log(r"instance crashed instance=default/p@1#0 exit=137")
            before = len(self.seqs(capture))
            wait_until(lambda: len(self.seqs(capture)) > before + 3000, 20, "traffic after the instance's crash")
            broker = next(c for c in children_of(self.engine.pid) if cmdline(c) == "drover-broker")
            os.kill(broker, signal.SIGKILL)
            self.engine.wait_log(r"broker exited, restarting exit=137")
            out, err = producer.communicate(timeout=120)
        finally:
            producer.kill()
        self.assertEqual(producer.returncode, 0, err)
        self.assertIn("acked=2000 records=20000", out)
        seqs = self.seqs(capture)
        self.assertEqual(set(seqs), set(range(20000)), "every acknowledged record was accepted downstream")
        print(f"accepted={len(seqs)} duplicates={len(seqs) - len(set(seqs))} {out.strip()}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
