"""exporter:s3 (docs/s3.md; issue 52) through the real binaries, against an
S3 and a client nobody here wrote (s3rver and the AWS SDK for JavaScript,
from tests/otel-js's lock file; the front that checks SigV4 with the SDK's
own signer: tests/otel-js/s3_front.js): every record once, in objects
whose keys are as templated; a large object by multipart; S3 down, then
back; wrong credentials and a bucket that does not exist named with S3's
own error in last_error; otlp_json objects that parse. Skipped without
node, npm or the npm registry, as the other npm clients' tests are."""

import gzip
import json
import re
import unittest

from harness import EngineTest, curl_post, free_port, wait_until
from test_otel_sdk import JsClients

def post(port, first, count, pad=""):
    """Records first.. as NDJSON, gzip'd (megabytes of padding cross the
    wire in kilobytes), in bodies of at most 4 MB (receiver:http's default
    max_body_bytes): a worker parses a body in one turn of its loop, and a
    20 MB body kept it from heartbeating for 3 s under ASan on a busy
    machine (docs/operations.md, "Heartbeats")."""
    per = max(1, (4 << 20) // (len(pad) + 32))
    for at in range(first, first + count, per):
        lines = "".join(json.dumps({"id": i, "pad": pad}) + "\n" for i in range(at, min(at + per, first + count)))
        status, body, _, _ = curl_post(port, "/", gzip.compress(lines.encode()), "application/x-ndjson",
                                       "-H", "Content-Encoding: gzip")
        assert status in (200, 202, 204), (status, body)


# A worker parses a 4 MB body in one turn of its loop: 0.14 s under ASan,
# but over 5 s once when the sanitized suite, a build and other tests
# shared the two cores. These tests are about S3: heartbeats every 3 s
# (9 s before an instance is called hung) keep them off the heartbeat's
# edge (docs/operations.md, "Heartbeats").
HEARTBEATS = "  heartbeat_interval_ms: 3000\n"

KEY = re.compile(r"^(logs|records)/year=\d{4}/month=\d\d/day=\d\d/hour=\d\d/default\.a\.0-(\d+)\.ndjson\.gz$")


class S3Archive(JsClients, EngineTest):
    def setUp(self):
        from s3 import S3
        self.s3 = S3()
        self.addCleanup(self.s3.close)
        self.start_admin_engine(engine_extra=HEARTBEATS)
        self.port = free_port()

    def put(self, cores=1, policies=None, **config):
        from s3 import KEY_ID, SECRET
        config = dict({"bucket": "archive", "endpoint": self.s3.endpoint, "path_style": True,
                       "credentials": {"access_key_id": KEY_ID, "secret_access_key": SECRET},
                       "max_object_age_secs": 1, "retry": {"initial_ms": 50, "max_ms": 300, "max_elapsed_secs": 0}},
                      **config)
        spec = {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}",
                                                       "max_body_bytes": 32 << 20}, "to": ["s3"]},
            "s3": {"type": "exporter:s3", "config": config}}}}
        if policies:
            spec["pipeline"]["policies"] = policies
        path = "/api/v1/groups/default/pipelines/a" + ("?wait=false" if policies else "")
        status, body, _ = self.admin.http("PUT", path, body=spec, timeout=30)
        self.assertIn(status, (200, 202), body)
        return body

    def send(self, first, count, pad=""):
        post(self.port, first, count, pad)

    def node(self):
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/a/status")
        return ((body.get("instances") or [{}])[0].get("nodes") or {}).get("s3", {})

    def ids(self, objects):
        return sorted(json.loads(line)["id"] for data in objects.values()
                      for line in gzip.decompress(data).decode().splitlines())

    def test_every_record_once_in_objects_keyed_as_templated(self):
        self.put()
        for k in range(5):
            self.send(k * 200, 200)
        objects = self.s3.wait_objects(lambda o: len(self.ids(o)) >= 1000, 30, "1000 records in objects")
        self.assertEqual(self.ids(objects), list(range(1000)), "every record once")
        seqs = []
        for key in objects:
            match = KEY.match(key)
            self.assertTrue(match, key)
            seqs.append(int(match.group(2)))
        self.assertEqual(len(set(seqs)), len(seqs), "no two objects share a sequence number")
        node = wait_until(lambda: (lambda n: n if n.get("records_out") == 1000 else None)(self.node()), 10,
                          "the records counted out")
        self.assertEqual(node["s3"]["objects"], len(objects), node)
        self.assertEqual(node.get("errors", 0), 0, node)

    def test_virtual_host_style(self):
        # BUCKET.s3.localhost:PORT/KEY: the bucket in the host, signed so.
        self.put(endpoint=f"http://s3.localhost:{self.s3.port}", path_style=False)
        self.send(0, 100)
        objects = self.s3.wait_objects(lambda o: len(self.ids(o)) >= 100, 30, "records through BUCKET.HOST")
        self.assertEqual(self.ids(objects), list(range(100)))
        self.assertIn("PUT /records/", self.s3.log_text(), "the path holds the key alone")

    def test_a_large_object_goes_by_multipart_whole(self):
        # About 20 MB: the object closes by its size (17 MiB: three parts)
        # whatever the machine's speed; the rest when a replace drains the
        # generation (it would close by its age only after a minute).
        self.put(compression="none", max_object_bytes=17 << 20, max_object_age_secs=60)
        self.send(0, 20000, "x" * 1000)
        node = wait_until(lambda: (lambda n: n if n.get("s3", {}).get("objects") else None)(self.node()), 60,
                          "the first object written")
        self.assertGreaterEqual(node["s3"]["parts"], 3, node)
        self.put(compression="none", max_object_bytes=17 << 20, max_object_age_secs=59)
        objects = self.s3.wait_objects(lambda o: len(o) == 2, 30, "the rest, written by the drained generation")
        ids = sorted(json.loads(line)["id"] for data in objects.values() for line in data.decode().splitlines())
        self.assertEqual(ids, list(range(20000)))
        self.assertTrue(any(len(data) > 8 << 20 for data in objects.values()), "one object past a part")
        self.assertEqual(self.s3.read()[1], 0, "no upload left open")

    def test_parts_go_while_the_object_fills(self):
        # An object that may grow to 64 MiB: its first parts are in S3
        # before it closes (the worker holds a part of encoded bytes, not
        # the object), and it is whole only once the pipeline's shutdown
        # closes it.
        self.put(compression="none", max_object_bytes=64 << 20, max_object_age_secs=600)
        self.send(0, 20000, "x" * 1000)
        wait_until(lambda: "partNumber=2&" in self.s3.log_text(), 60, "two parts sent while the object fills")
        objects, open_uploads = self.s3.read()
        self.assertEqual((objects, open_uploads), ({}, 1), "nothing listed yet, one upload open")
        self.assertEqual(wait_until(lambda: self.node().get("s3"), 10, "the node's status")["objects"], 0)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/a/shutdown", timeout=60)
        self.assertEqual(status, 200, body)
        objects = self.s3.wait_objects(lambda o: o, 30, "the object, closed by the shutdown")
        [(key, data)] = objects.items()
        self.assertEqual([json.loads(line)["id"] for line in data.decode().splitlines()], list(range(20000)))
        self.assertEqual(self.s3.read()[1], 0, "no upload left open")

    def test_every_record_once_through_a_resize_and_a_rollback(self):
        # Objects open on a core when the pipeline grows to two, then is
        # rolled back to one: each generation's instances write theirs as
        # they drain, under keys of their own, and no record is in two.
        self.put(max_object_age_secs=600)
        self.send(0, 300)
        self.put(cores=2, max_object_age_secs=599)  # a new generation, on two cores
        self.send(300, 300)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/a/rollback", timeout=30)
        self.assertIn(status, (200, 202), body)
        self.send(600, 300)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/a/shutdown", timeout=60)
        self.assertEqual(status, 200, body)
        objects = self.s3.wait_objects(lambda o: len(self.ids(o)) >= 900, 30, "every record, once the last drained")
        self.assertEqual(self.ids(objects), list(range(900)))
        self.assertEqual(self.s3.read()[1], 0, "no upload left open")

    def test_every_record_once_through_a_canary(self):
        # A canary's generation runs beside the old one on the core for its
        # hold, both taking requests and each writing objects of its own
        # (one sequence file per core: their keys never collide).
        self.put(max_object_age_secs=600)
        self.send(0, 200)
        rid = self.put(max_object_age_secs=599, policies={"rollout": {"canary": {"cores": 1, "hold_secs": 2}}})[
            "rollout_id"]
        rollout = lambda: self.admin.http("GET", f"/api/v1/groups/default/pipelines/a/rollouts/{rid}")[1]  # noqa: E731
        # (a machine slow enough to poll after the hold sends them to the new one alone: still once each)
        wait_until(lambda: rollout()["state"] in ("paused", "succeeded"), 30, "the canary's hold")
        for k in range(10):
            self.send(200 + 20 * k, 20)
        wait_until(lambda: rollout()["state"] in ("succeeded", "failed"), 60, "the promotion")
        self.assertEqual(rollout()["state"], "succeeded", rollout())
        self.send(400, 100)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/a/shutdown", timeout=60)
        self.assertEqual(status, 200, body)
        objects = self.s3.wait_objects(lambda o: len(self.ids(o)) >= 500, 30, "every record, once the last drained")
        self.assertEqual(self.ids(objects), list(range(500)))
        self.assertEqual(self.s3.read()[1], 0, "no upload left open")

    def test_s3_down_then_back_loses_nothing(self):
        self.put()
        self.send(0, 100)
        self.s3.wait_objects(lambda o: len(self.ids(o)) >= 100, 30, "the first records")
        self.s3.stop()
        self.send(100, 100)
        wait_until(lambda: self.node().get("retries", 0) >= 1, 20, "the exporter retrying")
        self.s3.start()
        objects = self.s3.wait_objects(lambda o: len(self.ids(o)) >= 200, 30, "the rest once it is back")
        self.assertEqual(self.ids(objects), list(range(200)))

    def test_wrong_credentials_and_a_missing_bucket_say_what_s3_said(self):
        self.put(credentials={"access_key_id": "AKIADROVERTEST000001", "secret_access_key": "wrong"},
                 retry={"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0})
        self.send(0, 10)
        node = wait_until(lambda: (lambda n: n if "SignatureDoesNotMatch" in (n.get("last_error") or "") else None)(
            self.node()), 20, "S3's SignatureDoesNotMatch in last_error")
        self.assertIn("403", node["last_error"])
        self.put(bucket="nowhere")
        self.send(10, 10)
        node = wait_until(lambda: (lambda n: n if "NoSuchBucket" in (n.get("last_error") or "") else None)(
            self.node()), 20, "S3's NoSuchBucket in last_error")
        self.assertGreaterEqual(node.get("errors", 0), 10, node)
        self.assertEqual(self.s3.read()[0], {}, "nothing was written")

    def test_otlp_json_objects_parse_as_export_requests(self):
        otlp = free_port()
        from s3 import KEY_ID, SECRET
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{otlp}"}, "to": ["s3"]},
            "s3": {"type": "exporter:s3", "config": {
                "bucket": "archive", "endpoint": self.s3.endpoint, "path_style": True, "format": "otlp_json",
                "compression": "zstd", "max_object_age_secs": 600, "key": "otlp/{signal}/{seq}.{ext}",
                "credentials": {"access_key_id": KEY_ID, "secret_access_key": SECRET}}}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/a", body=spec, timeout=30)
        self.assertEqual(status, 200, body)
        # Six inputs of 400 KB: the object is encoded a megabyte of records
        # at a time as they come, its runs joined into one request.
        for post in range(6):
            logs = {"resourceLogs": [{
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
                "scopeLogs": [{"logRecords": [{"body": {"stringValue": f"line {i} " + "y" * 2000}}
                                              for i in range(post * 200, post * 200 + 200)]}]}]}
            status, body, _, _ = curl_post(otlp, "/v1/logs", json.dumps(logs).encode(), "application/json")
            self.assertEqual(status, 200, body)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/a/shutdown", timeout=60)
        self.assertEqual(status, 200, body)
        objects = self.s3.wait_objects(lambda o: o, 30, "an OTLP object")
        [(key, data)] = objects.items()
        self.assertRegex(key, r"^otlp/logs/\d+\.json\.zst$")
        import subprocess
        text = subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout
        request = json.loads(text)
        bodies = [r["body"]["stringValue"] for rl in request["resourceLogs"] for sl in rl["scopeLogs"]
                  for r in sl["logRecords"]]
        self.assertEqual(bodies, [f"line {i} " + "y" * 2000 for i in range(1200)])

    def test_otlp_proto_objects_parse_with_protoc_classes(self):
        from grpc_otlp import WHY_NOT, request_class
        if WHY_NOT:
            self.skipTest(WHY_NOT)
        otlp = free_port()
        from s3 import KEY_ID, SECRET
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{otlp}"}, "to": ["s3"]},
            "s3": {"type": "exporter:s3", "config": {
                "bucket": "archive", "endpoint": self.s3.endpoint, "path_style": True, "format": "otlp_proto",
                "max_object_age_secs": 600, "credentials": {"access_key_id": KEY_ID, "secret_access_key": SECRET}}}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/a", body=spec, timeout=30)
        self.assertEqual(status, 200, body)
        # Six inputs of 400 KB: requests encoded a megabyte of records at a
        # time, concatenated (one request, as protobuf merges them).
        for post in range(6):
            spans = {"resourceSpans": [{"scopeSpans": [{"spans": [
                {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": f"b7ad6b716920{i:04x}",
                 "name": f"op {i} " + "z" * 2000, "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
                for i in range(post * 200, post * 200 + 200)]}]}]}
            status, body, _, _ = curl_post(otlp, "/v1/traces", json.dumps(spans).encode(), "application/json")
            self.assertEqual(status, 200, body)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/a/shutdown", timeout=60)
        self.assertEqual(status, 200, body)
        [(key, data)] = self.s3.wait_objects(lambda o: o, 30, "a traces object").items()
        self.assertRegex(key, r"^traces/.*\.binpb\.gz$")
        request = request_class("traces").FromString(gzip.decompress(data))
        self.assertEqual([sp.name for rs in request.resource_spans for ss in rs.scope_spans for sp in ss.spans],
                         [f"op {i} " + "z" * 2000 for i in range(1200)])
        self.assertGreater(len(request.resource_spans), 1, "runs concatenated")


class S3Faults(JsClients, EngineTest):
    """S3 answering SlowDown, refusing a completion; credentials from the
    environment."""

    def start(self, faults, **engine_env):
        from s3 import S3
        self.s3 = S3(faults=faults)
        self.addCleanup(self.s3.close)
        self.http_port, self.port = free_port(), free_port()
        from harness import Admin, engine_yaml
        self.start_engine(engine_yaml(engine_extra=HEARTBEATS).replace("HTTP", str(self.http_port)), env=engine_env)
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()

    put, send, node = S3Archive.put, S3Archive.send, S3Archive.node

    def test_slowdown_is_retried_and_credentials_come_from_the_environment(self):
        from s3 import KEY_ID, SECRET
        self.start({"S3_FRONT_SLOWDOWN": "3"}, AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET)
        config = {"bucket": "archive", "endpoint": self.s3.endpoint, "path_style": True, "max_object_age_secs": 1,
                  "retry": {"initial_ms": 50, "max_ms": 300, "max_elapsed_secs": 0}}
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}",
                                                       "max_body_bytes": 32 << 20}, "to": ["s3"]},
            "s3": {"type": "exporter:s3", "config": config}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/a", body=spec, timeout=30)
        self.assertEqual(status, 200, body)
        self.send(0, 50)
        objects = self.s3.wait_objects(lambda o: o, 30, "the object, after three SlowDowns")
        self.assertEqual(S3Archive.ids(self, objects), list(range(50)))
        node = wait_until(lambda: (lambda n: n if n.get("records_out") == 50 else None)(self.node()), 10,
                          "the records counted out")
        self.assertGreaterEqual(node.get("retries", 0), 3, node)
        self.assertEqual(node.get("errors", 0), 0, node)

    def test_an_upload_given_up_is_aborted(self):
        from s3 import KEY_ID
        self.start({"S3_FRONT_REFUSE_COMPLETE": "1"})
        # About 10 MB: an object of 9 MiB (two parts) closed by its size, the
        # rest (one PUT, not refused) when droverd stops.
        self.put(compression="none", max_object_bytes=9 << 20, max_object_age_secs=60)
        self.send(0, 10000, "x" * 1000)
        node = wait_until(lambda: (lambda n: n if "InvalidPart" in (n.get("last_error") or "") else None)(
            self.node()), 30, "S3's InvalidPart in last_error")
        self.assertIn("400", node["last_error"])
        wait_until(lambda: "DELETE " in self.s3.log_text() and "uploadId=" in self.s3.log_text(), 20,
                   "the upload aborted")
        node = wait_until(lambda: (lambda n: n if n.get("s3", {}).get("aborted") else None)(self.node()), 10,
                          "the abort counted")
        self.assertGreaterEqual(node.get("errors", 0), 8000, node)
        objects, open_uploads = self.s3.read()
        self.assertEqual(open_uploads, 0, "no upload left open")
        self.assertTrue(all(len(data) < 8 << 20 for data in objects.values()), "the refused object is nowhere")
        self.assertTrue(KEY_ID)


class S3Tls(JsClients, EngineTest):
    def test_https_with_a_ca_file_and_refused_without(self):
        from s3 import S3
        self.s3 = S3(tls=True)
        self.addCleanup(self.s3.close)
        self.start_admin_engine(engine_extra=HEARTBEATS)
        self.port = free_port()
        S3Archive.put(self, tls={"ca_file": self.s3.cert})
        self.send(0, 100)
        objects = self.s3.wait_objects(lambda o: len(S3Archive.ids(self, o)) >= 100, 30, "the records, over HTTPS")
        self.assertEqual(S3Archive.ids(self, objects), list(range(100)))
        # Without the CA the store's certificate is not trusted: nothing is
        # written, and last_error says why.
        S3Archive.put(self)
        self.send(100, 10)
        node = wait_until(lambda: (lambda n: n if "certificate" in (n.get("last_error") or "").lower() else None)(
            self.node()), 20, "a certificate error in last_error")
        self.assertEqual(node.get("records_out", 0), 0, node)
        self.assertEqual(len(S3Archive.ids(self, self.s3.read()[0])), 100)

    send, node = S3Archive.send, S3Archive.node


class S3Crash(JsClients, EngineTest):
    def test_the_tree_killed_mid_upload_with_a_disk_buffer_loses_nothing(self):
        """A slow S3 (each answer 300 ms late); 12 MB of records taken into
        the disk buffer make an object of two parts; droverd and every child
        SIGKILLed once the first part is on its way. The engine started
        again writes every record, once: the killed upload was never
        completed, so S3 lists nothing of it, and the next instance aborts
        it."""
        import signal

        from harness import Admin, engine_yaml
        from s3 import KEY_ID, S3, SECRET
        s3 = S3(delay_ms=300)
        self.addCleanup(s3.close)
        port, http_port = free_port(), free_port()
        config = engine_yaml(f"""
      a:
        cores: {{count: 1}}
        nodes:
          in: {{type: "receiver:http", config: {{endpoint: "127.0.0.1:{port}", max_body_bytes: 33554432}}, to: [s3]}}
          s3: {{type: "exporter:s3", config: {{bucket: archive, endpoint: "{s3.endpoint}", path_style: true,
               compression: none, max_object_bytes: 9437184, max_object_age_secs: 30,
               credentials: {{access_key_id: {KEY_ID}, secret_access_key: "{SECRET}"}},
               retry: {{initial_ms: 50, max_ms: 300, max_elapsed_secs: 0}}}}}}
        policies:
          buffer: {{type: disk, sync: batch, sync_interval_ms: 20}}
""", HEARTBEATS).replace("HTTP", str(http_port))
        engine = self.start_engine(config)
        Admin(engine, http_port).wait_ready(20)
        # About 12 MB: an object of 9 MiB (two parts) closed by its size
        # whatever the machine's speed, the rest (after the kill) by a replace.
        post(port, 0, 12000, "x" * 1000)
        wait_until(lambda: "partNumber=1" in s3.log_text(), 30, "the first part on its way")
        engine.signal(signal.SIGKILL)  # droverd is PID 1 of its namespace: every child goes with it
        engine.wait_exit(10)
        self.assertEqual(s3.read()[0], {}, "nothing listed of the killed upload")
        engine.log.close()
        engine.start()
        admin = Admin(engine, http_port)
        admin.wait_ready(20)

        def ids():
            objects = s3.read()[0]
            return sorted(json.loads(line)["id"] for data in objects.values() for line in data.decode().splitlines())
        wait_until(lambda: len(ids()) >= 9000, 60, "the first object again, from the disk buffer")
        status, body, _ = admin.http("GET", "/api/v1/groups/default/pipelines/a")
        self.assertEqual(status, 200, body)
        spec = body["spec"]
        spec["nodes"]["s3"]["config"]["max_object_age_secs"] = 29
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/a", body={"pipeline": spec}, timeout=30)
        self.assertEqual(status, 200, body)
        got = wait_until(lambda: (lambda i: i if len(i) >= 12000 else None)(ids()), 30, "the rest, once drained")
        self.assertEqual(got, list(range(12000)), "every record, once")
        # The killed instance's upload was written down (drv_s3_ledger.h):
        # the next aborted it, so S3 keeps none of its parts.
        self.assertEqual(s3.read()[1], 0, "no upload left open")
        self.assertRegex(s3.log_text(), r"DELETE \S*uploadId=")


if __name__ == "__main__":
    unittest.main()
