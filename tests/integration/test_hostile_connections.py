"""The hostile suite's connection findings (issue 23): one connection
policy for every listener droverd or an instance serves. Slow, silent,
dripping or streaming clients, from one address or many, never keep a
sender or a probe out, and what a flood took is given back. Each test names
the finding it covers; each failed before its fix. The other findings of
issue 23 are in test_hostile_surfaces.py."""

import unittest

from harness import SLOW, EngineTest, curl_post, free_port, read_ndjson, wait_until
from hostile import SANITIZED, rss_kb


def stalled(port, count, first_line=b"", addresses=16):
    """count connections to port from 127.0.0.2.. (addresses of them), each
    sending first_line and then nothing; returns the sockets."""
    import socket
    socks = []
    for i in range(count):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i % addresses}", 0))
        s.connect(("127.0.0.1", port))
        if first_line:
            s.sendall(first_line)
        socks.append(s)
    return socks


def closed_by_peer(sock, timeout):
    """True when the peer closed sock within timeout seconds."""
    import socket
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


class Receivers(EngineTest):
    """One connection policy for every listener an instance serves."""

    def start_pipeline(self, receiver, path="/", **config):
        self.start_admin_engine()
        port = free_port()
        proto = "tcp://" if receiver == "receiver:syslog" else ""
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": receiver, "config": {"endpoint": f"{proto}127.0.0.1:{port}", **config}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/r-{{core}}.ndjson"}}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/r", body=spec)[0], 200)
        return port

    def legit_post(self, port, path="/", ctype="application/x-ndjson", body=b'{"ok":1}\n'):
        import time
        start = time.monotonic()
        status, answer, _, _ = curl_post(port, path, body, ctype, "--max-time", "20")
        return status, time.monotonic() - start

    def test_a_gateway_behind_one_address_gets_the_connections_it_is_given(self):
        """A load balancer makes every client one address: with connections.
        per_address raised, 150 keep-alive clients from 127.0.0.1 all stay
        connected and are all answered (with the default 64 the oldest are
        cut as newcomers arrive)."""
        import http.client
        port = self.start_pipeline("receiver:http", connections={"per_address": 200, "idle_secs": 60})
        clients = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(150)]
        for c in clients:
            c.connect()
        for round_ in range(2):  # the second round reuses every connection: none was cut
            for i, c in enumerate(clients):
                c.request("POST", "/", f'{{"i":{i},"round":{round_}}}\n'.encode(),
                          {"Content-Type": "application/x-ndjson"})
                response = c.getresponse()  # a connection cut would raise here
                response.read()
                self.assertEqual(response.status, 200, (round_, i))
        for c in clients:
            c.close()
        wait_until(lambda: len(read_ndjson(f"{self.engine.out_dir}/r-0.ndjson")) == 300, 10, "300 records")
        bad = {"pipeline": {"nodes": {"in": {"type": "receiver:http", "config": {
            "endpoint": f"127.0.0.1:{free_port()}", "connections": {"per_adress": 2}}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/bad", body=bad)
        self.assertEqual(status, 422)
        self.assertIn('connections: unknown key \"per_adress\"', str(body))

    def test_declared_bodies_that_drip_hold_no_budget(self):
        # Finding: 16 connections each declaring Content-Length: 4194304 and
        # dripping a byte held every other sender at 429 (the budget was
        # reserved from the declared length before any byte arrived).
        for receiver, path, ctype, body in (("receiver:http", "/", "application/x-ndjson", b'{"ok":1}\n'),
                                            ("receiver:otlp", "/v1/logs", "application/json", b"{}")):
            with self.subTest(receiver=receiver):
                port = self.start_pipeline(receiver)
                head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n"
                        "Content-Length: 4194304\r\n\r\nx").encode()
                socks = stalled(port, 16, head)
                for _ in range(3):
                    status, took = self.legit_post(port, path, ctype, body)
                    self.assertEqual(status, 200)
                for s in socks:  # closed first: a drain waits for requests under way (up to its deadline)
                    s.close()
                self.engine.stop()

    def test_stalled_connections_cannot_keep_senders_out(self):
        # Finding: 1,100 connections sending half a request head pushed
        # legitimate POSTs past 30 s (no per-address cap, no per-request
        # deadline); a dripping sender was never cut.
        port = self.start_pipeline("receiver:http", connections={"request_secs": 5})
        socks = stalled(port, 1100, b"POST / HTTP/1.1\r\nHost: x\r\n")
        self.addCleanup(lambda: [s.close() for s in socks])
        for _ in range(5):
            status, took = self.legit_post(port)
            self.assertEqual(status, 200)
            self.assertLess(took, 5.0 * SLOW, "a sender got in at once")
        # A client that drips its head a byte at a time is cut at the request
        # deadline (here 5 s; 30 s unless given), although it is never silent
        # for long.
        import time
        dripper = stalled(port, 1, b"POST / HTTP/1.1\r\n", addresses=1)[0]
        self.addCleanup(dripper.close)
        start = time.monotonic()
        cut = False
        while not cut and time.monotonic() - start < 30 * SLOW:
            try:
                dripper.sendall(b"X")
            except OSError:
                break
            cut = closed_by_peer(dripper, 2)
        self.assertLess(time.monotonic() - start, 25 * SLOW, "the dripping request was cut at its deadline")
        self.assertGreater(time.monotonic() - start, 4, "not before")

    def test_silent_syslog_senders_cannot_hold_the_tcp_cap(self):
        # Finding: 1,100 silent TCP connections filled the 1,024 cap and held
        # it: no idle timeout, no per-address cap.
        import socket
        port = self.start_pipeline("receiver:syslog")
        socks = stalled(port, 1100)
        self.addCleanup(lambda: [s.close() for s in socks])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"<13>1 - h legit - - - got in\n")
        out = f"{self.engine.out_dir}/r-0.ndjson"
        rows = wait_until(lambda: read_ndjson(out), 10, "the legitimate message")
        self.assertEqual(rows[0]["message"], "got in")


class EventStreams(EngineTest):
    def test_event_streams_never_crowd_out_the_probes(self):
        # Finding: 1,008 unauthenticated GET /api/v1/events streams from 16
        # addresses made every /livez and /readyz connection be cut at once
        # (streams had no deadline, so the newcomer was the one cut).
        self.start_admin_engine()
        port = self.http_port
        socks = stalled(port, 1008, f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        self.addCleanup(lambda: [s.close() for s in socks])
        socks[-1].settimeout(10 * SLOW)
        self.assertTrue(socks[-1].recv(64).startswith(b"HTTP/1.1 200"), "the last stream is answered")
        for path in ("/livez", "/readyz") * 10:
            status, _, _ = self.admin.http("GET", path, timeout=3)
            self.assertEqual(status, 200, path)

    def test_memory_a_flood_of_streams_took_is_given_back(self):
        # Finding: droverd's RSS went from 14 MB to 177 MB after event-stream
        # floods and stayed there.
        import socket
        self.start_admin_engine()
        port, pid = self.http_port, self.engine.pid
        before = rss_kb(pid)
        socks = []
        for i in range(1000):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never read: queues fill
            s.bind((f"127.0.0.{2 + i % 16}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            socks.append(s)
        for i in range(400):
            self.admin.zmq("PUT", f"/api/v1/groups/flood-{i}")
        peak = rss_kb(pid)
        for s in socks:
            s.close()

        def given_back():
            self.admin.zmq("PUT", "/api/v1/groups/after-the-flood")  # an event: gone clients are noticed
            return rss_kb(pid) < before + 15 * 1024

        if not SANITIZED:
            wait_until(given_back, 20, f"RSS back near {before} kB (peak {peak} kB, now {rss_kb(pid)} kB)")
        print(f"droverd RSS: {before} kB before, {peak} kB with 1,000 streams, {rss_kb(pid)} kB after", flush=True)


if __name__ == "__main__":
    unittest.main()
