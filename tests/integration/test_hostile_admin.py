"""The hostile-input suite, admin side (issue 10, docs/security.md): what a web
page in the operator's browser, a local client of the zmq admin socket or a
flood of slow HTTP clients can do to droverd, and droverd stopping with
requests held. Each test names the finding it covers; each failed before its
fix. The files, run_dir and data-plane attacks are in test_hostile.py."""

import json
import os
import signal
import socket
import tempfile
import threading
import time
import unittest

import msgpack
import zmq

from harness import (SLOW, Admin, EngineTest, Producer, engine_yaml, free_port, read_ndjson, wait_until)
from hostile import SANITIZED, TOKEN, gen_spec, raw_http, rss_kb


def put_group(port, length, body=b"", expect=False):
    """A connection that sent PUT /api/v1/groups/x declaring `length` bytes,
    then `body` (what of it the test wants sent now)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"PUT /api/v1/groups/x HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n%s\r\n" % (length, b"Expect: 100-continue\r\n" if expect else b"") + body)
    return s


class HttpAdmin(EngineTest):
    """Host, Origin, Content-Type and token rules; bodies; slow clients."""

    def start(self, extra="", token=False):
        self.http_port = free_port()
        admin_extra = ""
        if token:
            self.token_file = tempfile.NamedTemporaryFile("w", delete=False, prefix="drv-token-")
            self.token_file.write(TOKEN + "\n")
            self.token_file.close()
            self.addCleanup(os.unlink, self.token_file.name)
            admin_extra = f", http_token_file: {self.token_file.name}"
        text = engine_yaml(engine_extra=extra).replace(
            '  admin: { http: "127.0.0.1:HTTP" }',
            '  admin: { http: "127.0.0.1:HTTP", http_hosts: ["drover.test"]' + admin_extra + ' }')
        engine = self.start_engine(text.replace("HTTP", str(self.http_port)))
        self.admin = Admin(engine, self.http_port, token=TOKEN if token else None)
        self.admin.wait_ready()
        return engine

    def test_dns_rebinding_foreign_host_gets_421_except_probes(self):
        self.start()
        for host in (b"evil.example", b"evil.example:%d" % self.http_port, b"127.0.0.1.evil.example"):
            status, data = raw_http(self.http_port, b"GET /status HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
            self.assertEqual(status, 421, data[:200])
            self.assertIn(b"misdirected_request", data)
            # Probes and scrapers come by pod IP: they answer whatever the Host.
            for probe in (b"/livez", b"/readyz", b"/metrics"):
                status, data = raw_http(self.http_port, b"GET " + probe + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
                self.assertEqual(status, 200, data[:200])
        for host in (b"localhost", b"localhost:1234", b"127.0.0.1:%d" % self.http_port, b"[::1]", b"drover.test",
                     b"DROVER.TEST:80"):
            status, data = raw_http(self.http_port, b"GET /status HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
            self.assertEqual(status, 200, (host, data[:200]))

    def test_cross_site_form_post_cannot_shut_a_pipeline_down(self):
        self.start()
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=gen_spec())[0], 200)
        path = "/api/v1/groups/default/pipelines/p/shutdown"
        # What an HTML form can send: text/plain, form-urlencoded, multipart.
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            status, body, _ = self.admin.http("POST", path, raw_body='{"x":1}', headers={"Content-Type": ctype})
            self.assertEqual((status, body["error"]["kind"]), (415, "unsupported_media_type"), body)
        status, body, _ = self.admin.http("DELETE", "/api/v1/groups/default/pipelines/p",
                                          headers={"Content-Type": "text/plain"})
        self.assertEqual(status, 415, body)
        # fetch() with a JSON type from a foreign page carries its Origin.
        for origin in ("http://evil.example", "null", "http://127.0.0.1.evil.example:%d" % self.http_port):
            status, body, _ = self.admin.http("POST", path, body={}, headers={"Origin": origin})
            self.assertEqual((status, body["error"]["kind"]), (403, "forbidden"), body)
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")
        self.assertEqual(body["phase"], "running", "nothing was shut down")
        # The console's own origin is fine.
        status, body, _ = self.admin.http("POST", path + "?wait=true", body={},
                                          headers={"Origin": f"http://127.0.0.1:{self.http_port}"})
        self.assertEqual(status, 200, body)

    def test_token_is_checked_before_the_body_is_read(self):
        self.start(token=True)
        # No token, a large declared body: the 401 comes back before a byte is sent.
        status, data = raw_http(self.http_port,
                                b"PUT /api/v1/groups/default/pipelines/p HTTP/1.1\r\nHost: localhost\r\n"
                                b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
        self.assertEqual(status, 401, data[:200])
        # 200 clients, each declaring ~1 MiB without the token, cost droverd nothing.
        before = rss_kb(self.engine.pid)
        socks = []
        try:
            for _ in range(200):
                socks.append(put_group(self.http_port, 1048000, b"[" * 60000))
            for s in socks:
                self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 401"))
        finally:
            for s in socks:
                s.close()
        if not SANITIZED:
            self.assertLess(rss_kb(self.engine.pid) - before, 20 * 1024, "bodies before the token check are not kept")

    def test_bodies_in_flight_are_bounded_and_memory_is_given_back(self):
        self.start()
        before = rss_kb(self.engine.pid)
        socks, statuses = [], []
        try:
            # 64 uploads of ~1 MiB held open: the body budget (16 MiB),
            # charged as bytes arrive, holds what fits (900,000 bytes each:
            # 18, and part of one more); the bodies past it are discarded as
            # they arrive and answered 503 once they end.
            for _ in range(64):
                socks.append(put_group(self.http_port, 1000000, b" " * 900000))
            peak = rss_kb(self.engine.pid)
            for s in socks:
                s.sendall(b" " * 100000)  # the bodies end: every request is answered
            for s in socks:
                s.settimeout(5)
                statuses.append(s.recv(4096)[:12])
        finally:
            for s in socks:
                s.close()
        # Held whole, then judged (spaces are not JSON): about what fits at
        # once (18), less one or two when the server read several bodies'
        # bytes in turn and the budget ran out in the middle of them (a slow,
        # sanitized build: 17), more when bodies that ended first made room
        # for ones not read yet. The peak RSS below is what shows the bound.
        held = statuses.count(b"HTTP/1.1 400")
        self.assertGreaterEqual(held, 16, statuses)
        self.assertEqual(statuses.count(b"HTTP/1.1 503"), 64 - held, statuses)
        self.assertGreaterEqual(64 - held, 32, "most were told to retry")
        if not SANITIZED:
            self.assertLess(peak - before, 40 * 1024, f"RSS grew {peak - before} kB")
            wait_until(lambda: rss_kb(self.engine.pid) - before < 12 * 1024, 10, "memory given back")

    def test_a_client_expecting_100_continue_is_refused_before_it_sends(self):
        self.start()
        socks = []
        try:
            # 17 bodies of 1,000,000 bytes, one byte short of their end, fill
            # the 16 MiB body budget once droverd has read them.
            for _ in range(17):
                socks.append(put_group(self.http_port, 1000000, b" " * 999999))

            def refused_at_once():
                # curl's way with a large body: the head, then wait for the go-ahead.
                with put_group(self.http_port, 1000000, expect=True) as s:
                    answer = s.recv(4096)
                    self.assertRegex(answer, rb"^HTTP/1.1 (100|503)", answer[:200])
                    if answer.startswith(b"HTTP/1.1 100"):
                        return False  # the budget is not full yet: go ahead was given
                    self.assertIn(b"Retry-After: 1", answer)
                    return True

            wait_until(refused_at_once, 10, "a 503 before the body is sent")
            # A client that does not wait is let send its whole body (discarded
            # as it arrives), then answered: it is never reset mid-send.
            with put_group(self.http_port, 1000000, b" " * 500000) as s:
                # A round trip on another connection: droverd has read our head.
                self.assertEqual(self.admin.http("GET", "/livez")[0], 200)
                s.sendall(b" " * 500000)
                self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 503"))
            for s in socks:
                s.sendall(b" ")  # the held bodies end; each is answered
            for s in socks:
                self.assertRegex(s.recv(4096)[:12], rb"HTTP/1.1 (400|503)")
        finally:
            for s in socks:
                s.close()

    def test_slow_clients_cannot_starve_the_probes(self):
        self.start()
        socks = []
        try:
            # 500 clients that send half a request head and stall.
            for _ in range(500):
                s = socket.create_connection(("127.0.0.1", self.http_port), timeout=5)
                s.sendall(b"GET /status HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                socks.append(s)
            for probe in ("/livez", "/readyz", "/livez", "/readyz"):
                started = time.monotonic()
                status = self.admin.http("GET", probe, timeout=2)[0]
                elapsed = time.monotonic() - started
                self.assertEqual(status, 200)
                self.assertLess(elapsed, 1.0 * SLOW, f"{probe} took {elapsed:.3f} s")
        finally:
            for s in socks:
                s.close()

    def test_a_dripping_client_is_cut_after_10_seconds(self):
        self.start()
        with socket.create_connection(("127.0.0.1", self.http_port), timeout=15) as s:
            started = time.monotonic()
            s.sendall(b"GET /status HTTP/1.1\r\nHost: localhost\r\n")
            closed_at = None
            # One byte every 0.5 s keeps an idle timeout happy; not the request clock.
            while time.monotonic() - started < 14:
                try:
                    s.sendall(b"X")
                    s.settimeout(0.5)
                    if s.recv(1) == b"":
                        closed_at = time.monotonic() - started
                        break
                except TimeoutError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    closed_at = time.monotonic() - started
                    break
            self.assertIsNotNone(closed_at, "still open after 14 s")
            self.assertGreater(closed_at, 9.0)

    def test_strings_with_nul_or_invalid_utf8_are_refused_with_400(self):
        self.start()
        for path, field in (("/api/v1/groups/a%00b", "path"), ("/api/v1/groups/%ff", "path"),
                            ("/status?x=%00", "query.x"), ("/status?x=%c0%af", "query.x")):
            status, data = raw_http(self.http_port, f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
            self.assertEqual(status, 400, data[:300])
            body = json.loads(data.partition(b"\r\n\r\n")[2])
            self.assertTrue(body["error"]["message"].startswith(field + ":"), body)
        # A PUT of a group named with a NUL creates nothing.
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/ok%00evil")
        self.assertEqual(status, 400, body)
        self.assertNotIn("ok", [g["name"] for g in self.admin.http("GET", "/api/v1/groups")[1]])
        # Duplicate keys in a JSON body: refused, not silently one of them.
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/d",
                                          raw_body='{"pipeline": {"nodes": {}}, "pipeline": {}}')
        self.assertEqual(status, 400, body)
        self.assertIn("duplicate", body["error"]["message"])
        self.assertEqual(self.admin.http("GET", "/livez")[0], 200)


class ZmqAdmin(EngineTest):
    """The zmq admin: bin values, invalid UTF-8, junk envelopes; nesting."""

    def setUp(self):
        self.start_admin_engine()

    def put_raw(self, spec_bytes):
        """A PUT whose body.pipeline is spliced in as raw msgpack."""
        head = msgpack.packb({"method": "PUT", "path": "/api/v1/groups/default/pipelines/x"})
        # head is a fixmap of 2; make it 3 and add "body": {"pipeline": <raw>}.
        envelope = bytes([0x83]) + head[1:] + msgpack.packb("body") + b"\x81" + msgpack.packb("pipeline") + spec_bytes
        return self.admin.zmq(None, None, raw=envelope)

    def test_bin_values_and_invalid_utf8_are_refused_naming_the_field(self):
        good = gen_spec()["pipeline"]
        cases = [
            # (spec with a hostile value, the field named)
            ({**good, "nodes": {**good["nodes"], "out": {"type": "exporter:file", "config": {"path": b"/tmp/x"}}}},
             "body.pipeline.nodes.out.config.path: binary values are not allowed"),
            ({**good, "nodes": {**good["nodes"], "out": {"type": "exporter:null", "config": {}},
                                "g": {"type": "receiver:generator", "config": {"record": {"m": "\udcff"}},
                                      "to": ["out"]}}},
             "body.pipeline.nodes.g.config.record.m: string is not valid UTF-8"),
        ]
        for spec, expected in cases:
            raw = msgpack.packb(spec, use_bin_type=True, unicode_errors="surrogateescape")
            status, body = self.put_raw(raw)
            self.assertEqual(status, 400, body)
            self.assertIn(expected, body["error"]["message"])
        # A key that is not UTF-8, and a NUL in a value.
        for raw in (b"\x81\xa2\xc3\x28\x01", b"\x81\xa5nodes\xa3a\x00b"):
            status, body = self.put_raw(raw)
            self.assertEqual(status, 400, body)
        # Each was refused whole: nothing was created, droverd is alive.
        self.assertEqual(self.admin.zmq("GET", "/api/v1/groups/default/pipelines/x")[0], 404)
        self.assertEqual(self.admin.zmq("GET", "/livez"), (200, "ok\n"))
        self.assertEqual(self.admin.http("GET", "/status")[0], 200, "status still serialises")

    def test_query_values_are_percent_decoded_and_checked_like_http(self):
        status, body = self.admin.zmq("GET", "/api/v1/groups/a%00b")
        self.assertEqual(status, 400, body)
        status, body = self.admin.zmq("GET", "/status?x=%ff")
        self.assertEqual(status, 400, body)
        self.assertTrue(body["error"]["message"].startswith("query.x:"), body)

    def test_one_nesting_limit_on_every_way_in(self):
        def spec_of_depth(depth):
            # spec > nodes > g > config > record > deep: 6 levels, then lists.
            deep = 0
            for _ in range(depth - 6):
                deep = [deep]
            spec = gen_spec()
            spec["pipeline"]["nodes"]["g"]["config"]["record"] = {"deep": deep}
            return spec
        for transport in ("zmq", "http"):
            if transport == "zmq":
                status, body = self.admin.zmq("PUT", "/api/v1/groups/default/pipelines/d", body=spec_of_depth(28))
            else:
                status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/d",
                                                  body=spec_of_depth(28))
            self.assertEqual(status, 422, body)
            self.assertIn("nested deeper than 24", body["error"]["message"])
        # At the limit, the spec is accepted and the worker takes it too.
        out = os.path.join(self.engine.out_dir, "deep.ndjson")
        spec = spec_of_depth(24)
        spec["pipeline"]["nodes"]["out"] = {"type": "exporter:file", "config": {"path": out}}
        status, body = self.admin.zmq("PUT", "/api/v1/groups/default/pipelines/d", body=spec)
        self.assertEqual(status, 200, body)
        wait_until(lambda: read_ndjson(out), 5, "records from the deepest spec allowed")

    def test_every_number_has_a_range(self):
        cases = [
            ({"cores": {"set": [4294967296]}}, "cores.set[0]"),
            ({"policies": {"rollout": {"step_timeout_secs": 2 ** 62}}}, "policies.rollout.step_timeout_secs"),
            ({"policies": {"restart": {"max_backoff_ms": 2 ** 40}}}, "policies.restart.max_backoff_ms"),
        ]
        for extra, field in cases:
            spec = gen_spec()
            spec["pipeline"].update(extra)
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/n", body=spec)
            self.assertEqual(status, 422, body)
            self.assertEqual(body["error"]["details"][0]["path"], field)
        spec = gen_spec()
        spec["pipeline"]["nodes"]["out"] = {"type": "exporter:zmq",
                                            "config": {"endpoint": "tcp://127.0.0.1:1", "hwm": 2 ** 32}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/n", body=spec)
        self.assertEqual(status, 422, body)
        self.assertEqual(body["error"]["details"][0]["path"], "nodes.out.config.hwm")


class Shutdown(EngineTest):
    """SIGTERM while requests wait: every waiter answered, exit 0."""

    def slow_to_drain(self):
        self.http_port = free_port()
        port = free_port()
        engine = self.start_engine(engine_yaml(engine_extra="  shutdown_timeout_secs: 4\n")
                                   .replace("HTTP", str(self.http_port)))
        self.admin = Admin(engine, self.http_port)
        self.admin.wait_ready()
        # exporter:zmq towards nobody: a batch in it never leaves, so the drain waits.
        spec = {"pipeline": {"nodes": {
            "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{free_port()}", "hwm": 1}}}},
            "drain_timeout_secs": 60}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/slow", body=spec)[0], 200)
        producer = Producer(f"tcp://127.0.0.1:{port}")
        for i in range(20):
            producer.send({"i": i})
        producer.close()
        #  In the instance before any shutdown: else the drain has nothing to wait for.
        wait_until(lambda: ((self.admin.http("GET", "/api/v1/groups/default/pipelines/slow/status")[1]
                             .get("instances") or [{}])[0].get("nodes") or {}).get("out", {}).get("records_in", 0) > 0,
                   10, "records held by the exporter towards nobody")
        return engine

    def wait_in_thread(self, path):
        result = {}

        def call():
            try:
                result["status"] = self.admin.http("POST", path, body={}, timeout=30)[0]
            except Exception as e:  # noqa: BLE001 - the test reports it
                result["error"] = repr(e)
        t = threading.Thread(target=call)
        t.start()
        return t, result

    def test_sigterm_while_a_shutdown_waits_answers_it_and_exits_0(self):
        engine = self.slow_to_drain()
        t, result = self.wait_in_thread("/api/v1/groups/default/pipelines/slow/shutdown?wait=true&timeout_secs=30")
        engine.wait_log(r"pipeline shutdown started pipeline=default:slow", 5)
        engine.signal(signal.SIGTERM)
        self.assertEqual(engine.wait_exit(30), 0, engine.log_text()[-3000:])
        t.join(10)
        self.assertIn("status", result, result)

    def test_a_second_sigterm_while_waiting_also_exits_0(self):
        engine = self.slow_to_drain()
        t, result = self.wait_in_thread("/api/v1/groups/default/pipelines/slow/shutdown?wait=true&timeout_secs=30")
        engine.wait_log(r"pipeline shutdown started pipeline=default:slow", 5)
        engine.signal(signal.SIGTERM)
        engine.wait_log(r"shutdown started signal")
        engine.signal(signal.SIGTERM)
        self.assertEqual(engine.wait_exit(30), 0, engine.log_text()[-3000:])
        t.join(10)
        self.assertIn("status", result, result)


if __name__ == "__main__":
    unittest.main(verbosity=2)
