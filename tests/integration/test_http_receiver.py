"""receiver:http through the real binaries, fed by curl: NDJSON, JSON and
msgpack bodies (gzip'd too) become records; bad bodies are refused whole
with the status that says why and nothing of them is exported; the
listening socket is droverd's and every instance accepts on it, so
keep-alive clients posting through replaces and a resize see no failed
request and lose no record; with ack: true a request whose records an
exporter gave up is answered 502, not 200 (issue 47, docs/nodes.md)."""

import glob
import gzip
import json
import os
import socket
import subprocess
import unittest

import msgpack

from harness import (SLOW, Admin, EngineTest, changes_under_load, curl_post, engine_yaml, every_one_once, free_port,
                     ndjson_keepalive_client, read_ndjson, wait_until)


def curl(port, path, data, ctype, *extra):
    status, body, _, head = curl_post(port, path, data, ctype, *extra)
    return status, body.decode(errors="replace"), head


class HttpReceiver(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.out = self.engine.out_dir
        self.port = free_port()

    def spec(self, tag="v1", cores=1, **config):
        config = {"endpoint": f"127.0.0.1:{self.port}", "path": "/ingest", **config}
        return {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:http", "config": config, "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"set": {"tag": tag}}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.out}/http-{{core}}-{{generation}}.ndjson"}}}}}

    def put(self, spec, timeout=5.0):
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/web", body=spec, timeout=timeout)
        self.assertEqual(status, 200, body)
        return body

    def records(self):
        rows = []
        for path in sorted(glob.glob(f"{self.out}/http-*.ndjson")):
            rows += read_ndjson(path)
        return rows

    def wait_records(self, n):
        return wait_until(lambda: (lambda r: r if len(r) >= n else None)(self.records()), 10, f"{n} records")

    def test_an_acknowledged_request_is_answered_once_exported_not_at_the_next_heartbeat(self):
        # Issue 24: with ack: true an isolated request waited ~1 s for the
        # loop's next heartbeat wake-up, although the file had it at once.
        import http.client
        import time
        self.put(self.spec(ack=True))
        took = []
        for i in range(20):
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            start = time.monotonic()
            conn.request("POST", "/ingest", body=f'{{"n":{i}}}\n', headers={"Content-Type": "application/x-ndjson"})
            status = conn.getresponse().status
            took.append(time.monotonic() - start)
            conn.close()
            self.assertEqual(status, 200)
            time.sleep(0.05)  # isolated requests: the loop is idle between them
        took.sort()
        print(f"ack: true into exporter:file: p50 {took[10] * 1000:.1f} ms, max {took[-1] * 1000:.1f} ms", flush=True)
        self.assertLess(took[-1], 0.25 * SLOW, "answered once exported")
        self.assertEqual(len(self.records()), 20)

    def test_with_ack_a_request_an_exporter_gave_up_is_answered_502(self):
        from capture import Capture
        backend = Capture(plan=[(400, {}, b"bad request, for good")])  # the first batch refused: given up
        self.addCleanup(backend.close)
        spec = self.spec(ack=True)
        spec["pipeline"]["nodes"]["t"]["to"] = ["out", "web"]
        spec["pipeline"]["nodes"]["web"] = {"type": "exporter:http", "config": {
            "endpoint": backend.url("/logs"), "format": "ndjson", "batch": {"max_records": 1, "max_delay_ms": 1}}}
        self.put(spec)
        status, body, _ = curl(self.port, "/ingest", b'{"n": 0}\n', "application/x-ndjson")
        self.assertEqual(status, 502, body)
        self.assertIn("given up by an exporter", body)
        status, body, _ = curl(self.port, "/ingest", b'{"n": 1}\n', "application/x-ndjson")
        self.assertEqual((status, json.loads(body)), (200, {"accepted": 1}), "delivered by both: 200")

    @unittest.skipUnless(subprocess.run(["which", "curl"], capture_output=True).returncode == 0, "no curl")
    def test_curl_posts_every_body_kind(self):
        self.put(self.spec())
        status, body, _ = curl(self.port, "/ingest", b'{"n": 1, "s": "a"}\n\n{"n": 2, "nested": {"x": [1, 2]}}\n',
                               "application/x-ndjson")
        self.assertEqual((status, json.loads(body)), (200, {"accepted": 2}))
        status, body, _ = curl(self.port, "/ingest", b'{"n": 3}', "application/json; charset=utf-8")
        self.assertEqual((status, json.loads(body)), (200, {"accepted": 1}))
        status, body, _ = curl(self.port, "/ingest", b'[{"n": 4}, {"n": 5, "u": "\\u00e9"}]', "application/json")
        self.assertEqual((status, json.loads(body)), (200, {"accepted": 2}))
        status, body, _ = curl(self.port, "/ingest", msgpack.packb([{"n": 6, "b": True}, {"n": 7}]), "application/msgpack")
        self.assertEqual((status, json.loads(body)), (200, {"accepted": 2}))
        status, body, _ = curl(self.port, "/ingest", gzip.compress(b'{"n": 8}\n{"n": 9}\n'), "application/x-ndjson",
                               "-H", "Content-Encoding: gzip")
        self.assertEqual((status, json.loads(body)), (200, {"accepted": 2}))
        rows = {r["n"]: r for r in self.wait_records(9)}
        self.assertEqual(sorted(rows), list(range(1, 10)))
        self.assertEqual(rows[2]["nested"], {"x": [1, 2]})
        self.assertEqual(rows[5]["u"], "\u00e9")
        self.assertEqual(rows[6]["b"], True)
        self.assertEqual({r["tag"] for r in rows.values()}, {"v1"})

    def test_bad_bodies_are_refused_whole_and_nothing_of_them_is_exported(self):
        self.put(self.spec(max_body_bytes=4096))
        cases = [
            (b'{"n": 1}\n{"n": 2}\n{"n": \n', "application/x-ndjson", 400, "line 3"),
            (b'{"n": 1}\n[1, 2]\n', "application/x-ndjson", 400, "line 2: a record must be a JSON object"),
            (b'[{"n": 1}, 7]', "application/json", 400, "item 1"),
            (b'{"n": 1, "n": 2}', "application/json", 400, "duplicate"),
            (b'"just a string"', "application/json", 400, "object"),
            (b'{"a": ' + b'[' * 40 + b']' * 40 + b'}', "application/json", 400,
             "document 0: nested deeper than 31 levels"),
            #  32 levels: a record then could not be packed in a batch (a disk buffer's log, the broker)
            (b'{"a": ' + b'[' * 31 + b']' * 31 + b'}', "application/json", 400,
             "document 0: nested deeper than 31 levels"),
            (msgpack.packb([{"n": 1}, 5]), "application/msgpack", 400, "batch item 1 is not a map"),
            (b"\xc1\xc1", "application/msgpack", 400, "msgpack"),
            (b'{"n": 1}', "text/plain", 415, "Content-Type must be one of"),
            (b'{"n": 1}\n' * 1000, "application/x-ndjson", 413, "larger than 4096 bytes"),
        ]
        for data, ctype, want, words in cases:
            status, body, _ = curl(self.port, "/ingest", data, ctype)
            self.assertEqual(status, want, (data[:40], body))
            self.assertIn(words, json.loads(body)["error"]["message"], data[:40])
        # gzip: not gzip at all, and a small body that inflates past the limit
        status, body, _ = curl(self.port, "/ingest", b"plain", "application/json", "-H", "Content-Encoding: gzip")
        self.assertEqual(status, 400, body)
        status, body, _ = curl(self.port, "/ingest", gzip.compress(b" " * 100000 + b"{}"), "application/json",
                               "-H", "Content-Encoding: gzip")
        self.assertEqual(status, 413, body)
        self.assertIn("once gunzipped", body)
        status, body, _ = curl(self.port, "/ingest", b"{}", "application/json", "-H", "Content-Encoding: br")
        self.assertEqual(status, 415, body)
        # Chunked, no Content-Length, past the limit: read and discarded, then 413.
        status, body, _ = curl(self.port, "/ingest", b'{"n": 1}\n' * 1000, "application/x-ndjson",
                               "-H", "Transfer-Encoding: chunked")
        self.assertEqual(status, 413, body)
        # Wrong path and wrong method, then one good body: the only records.
        status, body, _ = curl(self.port, "/elsewhere", b"{}", "application/json")
        self.assertEqual(status, 404, body)
        get = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %header{allow}",
                              f"http://127.0.0.1:{self.port}/ingest"], capture_output=True, text=True)
        self.assertEqual(get.stdout, "405 POST")
        status, body, _ = curl(self.port, "/ingest", b'{"good": true}', "application/json")
        self.assertEqual(status, 200, body)
        self.assertEqual([r.get("good") for r in self.wait_records(1)], [True])

    def test_keep_alive_clients_through_replaces_and_a_resize_lose_nothing(self):
        self.put(self.spec(cores=2))

        client = ndjson_keepalive_client(self.port)

        def change(n):
            body = self.put(self.spec(tag=f"v{min(n, 2) + 2}", cores=2 if n < 3 else 1), timeout=60)
            self.assertEqual(body["action"], "replace" if n < 3 else "resize")
        want = changes_under_load(self, client, change)
        every_one_once(self, want, lambda: [(r["c"], r["s"]) for r in self.records()], "records")
        self.assertEqual({r["tag"] for r in self.records()}, {"v1", "v2", "v3", "v4"})
        print(f"http under load: {len(want)} records in keep-alive requests, 3 replaces and a resize, "
              f"no request failed, none lost", flush=True)

    def test_a_port_another_process_holds_fails_the_create_with_the_errno(self):
        with socket.socket() as held:
            held.bind(("127.0.0.1", self.port))
            held.listen()
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/web", body=self.spec())
            self.assertEqual(status, 409, body)
            self.assertIn(f"127.0.0.1:{self.port}: bind: Address already in use", body["rollout"]["failure_reason"])

    def test_bad_configs_are_refused_with_their_paths(self):
        for change, words in (({"endpoint": "udp://127.0.0.1:1"}, "must be host:port"),
                              ({"path": "ingest"}, "must start with /"),
                              ({"max_body_bytes": 0}, "at least 1")):
            spec = self.spec(**change)
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/web", body=spec)
            self.assertEqual(status, 422, body)
            self.assertIn(words, json.dumps(body["error"]["details"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
