"""The hostile suite for the surfaces added in the second round (issue 23):
scripts, OTLP/protobuf, dry runs, the receivers' connections, the event
stream, exporters' retries, secrets in specs, the watched config file,
histories. Each test names the finding it covers; each failed before its
fix. The first round's findings are in test_hostile.py and
test_hostile_admin.py."""

import glob
import json
import os
import re
import shutil
import tempfile
import unittest

from harness import ndjson, EngineTest, curl_post, free_port, read_ndjson, unobserved, wait_until
from hostile import SANITIZED, rss_kb


class Scripts(EngineTest):
    """processor:lua: limits a script cannot defeat, files it may not name."""

    def setUp(self):
        self.data = tempfile.mkdtemp(prefix="drv-data-")
        self.addCleanup(shutil.rmtree, self.data, True)
        self.start_admin_engine(engine_extra=f"  data_dirs: [{self.data}]\n")
        self.port = free_port()

    def spec(self, lua_config):
        out = {"type": "exporter:file", "config": {"path": f"{self.data}/out-{{core}}-{{generation}}.ndjson"}}
        nodes = {"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["s"]},
                 "s": {"type": "processor:lua", "config": lua_config, "to": ["out"]}, "out": out}
        return {"pipeline": {"cores": {"count": 1}, "nodes": nodes}}

    def put(self, spec):
        return self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=spec)

    def send(self, records):
        status, body, _, _ = curl_post(self.port, "/", ndjson(records), "application/x-ndjson")
        self.assertEqual(status, 200, body)

    def rows(self):
        return [r for path in sorted(glob.glob(f"{self.data}/out-*.ndjson")) for r in read_ndjson(path)]

    def node_errors(self):
        text = self.admin.http("GET", "/metrics")[1]
        m = re.search(r'^drover_node_errors_total\{group="default",pipeline="p",node="s",[^}]*\} (\d+)$', text, re.M)
        return int(m.group(1)) if m else None

    def test_pcall_cannot_catch_the_instruction_limit(self):
        # Finding: the limit hook raised an ordinary error; a pcall loop took
        # it and ran on until the heartbeat kill (restarts, degraded).
        script = ("function process(r)\n"
                  "  if r.poison then\n"
                  "    while true do pcall(function() while true do end end) end\n"
                  "  end\n"
                  "  if r.handler then\n"
                  "    while true do xpcall(function() while true do end end, function(e) return e end) end\n"
                  "  end\n"
                  "  return r\n"
                  "end\n")
        self.assertEqual(self.put(self.spec({"script": script, "max_instructions": 100000}))[0], 200)
        pid = self.engine.wait_instances(["default/p@1#0"])["default/p@1#0"]
        self.send([{"poison": 1}, {"n": 1}, {"handler": 1}, {"n": 2}])
        wait_until(lambda: [r.get("n") for r in self.rows()] == [1, 2], 10, "the records after the poison ones")
        wait_until(lambda: self.node_errors() == 2, 10, "two records failed")
        log = self.engine.log_text()
        self.assertIn('reason="instruction limit reached (max_instructions 100000)"', log)
        self.assertEqual(self.engine.instances().get("default/p@1#0"), pid, "the instance was never killed")
        self.assertNotIn("heartbeats missed", log)

    def test_a_shared_table_is_copied_within_the_memory_limit(self):
        # Finding: t = {a = t, b = t} nested 23 levels was copied once per
        # reference in C, outside the allocator limit: 31 MB -> 1.08 GB.
        script = ("function process(r)\n"
                  "  if r.dag then\n"
                  "    local t = {x = 'leaf'}\n"
                  "    for i = 1, 23 do t = {a = t, b = t} end\n"
                  "    return t\n"
                  "  end\n"
                  "  return r\n"
                  "end\n")
        spec = self.spec({"script": script, "max_memory_bytes": 32 * 1024 * 1024})
        self.assertEqual(self.put(spec)[0], 200)
        pid = self.engine.wait_instances(["default/p@1#0"])["default/p@1#0"]
        self.send([{"dag": 1}, {"n": 1}])
        wait_until(lambda: [r.get("n") for r in self.rows()] == [1], 10, "the record after the DAG")
        self.engine.wait_log(r'record failed node=s reason="memory limit reached \(max_memory_bytes\) copying')
        self.assertEqual(self.engine.instances().get("default/p@1#0"), pid)
        if not SANITIZED:
            self.assertLess(rss_kb(pid), 200 * 1024, "the copy stayed within the limit")

    def test_a_script_file_outside_data_dirs_is_never_opened(self):
        # Finding: refused with 422 and read and compiled anyway: the 422
        # quoted the file's content and told whether the file existed.
        outside = tempfile.mkdtemp(prefix="drv-outside-")
        self.addCleanup(shutil.rmtree, outside, True)
        secret = os.path.join(outside, "secret.lua")
        with open(secret, "w") as f:
            f.write("Sup3rS3cretPassw0rd = = 1\n")
        answers = []
        for path in (secret, os.path.join(outside, "missing.lua")):
            status, body, _ = self.put(self.spec({"script_file": path}))
            self.assertEqual(status, 422, body)
            text = json.dumps(body)
            self.assertNotIn("Sup3rS3cret", text)
            self.assertNotIn("syntax", text)
            self.assertNotIn("No such file", text)
            answers.append([d["message"].replace(path, "PATH") for d in body["error"]["details"]])
        self.assertEqual(answers[0], answers[1], "an existing file and a missing one get the same answer")
        self.assertIn("outside engine.data_dirs", answers[0][0])

    def test_files_that_would_block_are_refused_not_opened(self):
        # Finding: an exporter's tls.ca_file that is a FIFO blocked whoever
        # opened it (the dry run's probe, an instance at start).
        fifo = os.path.join(self.data, "ca.pem")
        os.mkfifo(fifo)
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "g": {"type": "receiver:generator", "config": {"rate": 1}, "to": ["out"]},
            "out": {"type": "exporter:http", "config": {"endpoint": "https://127.0.0.1:9/", "tls": {"ca_file": fifo}}}}}}
        status, body, _ = self.put(spec)
        self.assertEqual(status, 422, body)
        self.assertIn(f"config.tls.ca_file: {fifo} is not a regular file", json.dumps(body))
        spec["pipeline"]["nodes"]["out"]["config"]["tls"]["ca_file"] = "/root/ca.pem"
        status, body, _ = self.put(spec)
        self.assertEqual(status, 422, body)
        self.assertIn("outside engine.data_dirs", json.dumps(body))
        status, body, _ = self.put(self.spec({"script_file": fifo}))
        self.assertEqual(status, 422, body)
        self.assertIn("not a regular file", json.dumps(body))


class WatchedConfig(EngineTest):
    def test_a_fifo_renamed_over_the_config_file_blocks_nothing(self):
        # Finding: watch_config opened it blocking: droverd's loop stuck in
        # open() for good, /livez never answered again.
        port = free_port()
        engine = self.start_engine("engine:\n  run_dir: {RUN}\n  watch_config: true\n"
                                   f'  admin: {{ http: "127.0.0.1:{port}" }}\ngroups: {{}}\n')
        from harness import Admin
        admin = Admin(engine, port)
        admin.wait_ready()
        with open(engine.config_path) as f:
            good = f.read()
        fifo = engine.config_path + ".fifo"
        os.mkfifo(fifo)
        os.rename(fifo, engine.config_path)
        engine.wait_log(r"not a regular file")
        self.assertEqual(admin.http("GET", "/livez", timeout=2)[0], 200)
        with open(engine.config_path + ".tmp", "w") as f:
            f.write(good + "# edited\n")
        os.rename(engine.config_path + ".tmp", engine.config_path)
        engine.wait_log(r"config reloaded path=")
        self.assertEqual(admin.http("GET", "/livez", timeout=2)[0], 200)


class Exporters(EngineTest):
    def test_a_huge_retry_after_cannot_wedge_a_pipeline(self):
        # Finding: 503 with Retry-After: 100000000 parked the batch for good
        # despite retry.max_elapsed_secs: 5 (nothing dropped, receivers at
        # 429, DELETE timed out): Retry-After was used uncapped and
        # max_elapsed checked only at the next failure.
        from capture import Capture
        capture = Capture([(503, {"Retry-After": "100000000"}, b"come back in three years")] * 50)
        self.addCleanup(capture.close)
        self.start_admin_engine()
        port = free_port()
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:http", "config": {
                "endpoint": capture.url("/in"), "batch": {"max_delay_ms": 10},
                "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 2}}}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/w", body=spec)[0], 200)
        status, body, _, _ = curl_post(port, "/", ndjson([{"n": 1}]), "application/x-ndjson")
        self.assertEqual(status, 200, body)
        wait_until(lambda: len(capture.requests) >= 1, 5, "the first attempt")
        self.engine.wait_log(r"export gave up node=out records=1 reason=.*retry\.max_elapsed_secs \(2 s\)", 8)
        self.assertGreaterEqual(len(capture.requests), 2, "one last attempt at the deadline")
        status, body, _ = self.admin.http("DELETE", "/api/v1/groups/default/pipelines/w", timeout=15)
        self.assertEqual(status, 200, body)


class Secrets(EngineTest):
    def test_exporter_headers_and_url_passwords_need_the_token_to_be_read(self):
        # Finding: GET .../pipelines/{p} without the token returned exporter
        # headers in clear (Authorization: Bearer ...), while a tap of the
        # same pipeline needed the token.
        from harness import Admin
        from hostile import TOKEN
        token_file = tempfile.NamedTemporaryFile("w", delete=False, prefix="drv-token-")
        token_file.write(TOKEN + "\n")
        token_file.close()
        self.addCleanup(os.unlink, token_file.name)
        port = free_port()
        engine = self.start_engine("engine:\n  run_dir: {RUN}\n"
                                   f'  admin: {{ http: "127.0.0.1:{port}", http_token_file: {token_file.name} }}\n'
                                   "groups: {}\n")
        admin = Admin(engine, port, token=TOKEN)
        admin.wait_ready()
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "g": {"type": "receiver:generator", "config": {"rate": 1}, "to": ["out"]},
            "out": {"type": "exporter:http", "config": {
                "endpoint": "http://ingest:hunter2@127.0.0.1:9/in", "retry": {"max_elapsed_secs": 1},
                "headers": {"Authorization": "Bearer Sup3rS3cret", "X-Api-Key": "k3y"}}}}}}
        self.assertEqual(admin.http("PUT", "/api/v1/groups/default/pipelines/s", body=spec)[0], 200)
        anonymous = Admin(engine, port)
        status, body, _ = anonymous.http("GET", "/api/v1/groups/default/pipelines/s")
        self.assertEqual(status, 200, body)
        config = body["spec"]["nodes"]["out"]["config"]
        self.assertEqual(config["headers"], {"Authorization": "(redacted)", "X-Api-Key": "(redacted)"})
        self.assertEqual(config["endpoint"], "http://ingest:(redacted)@127.0.0.1:9/in")
        self.assertNotIn("Sup3rS3cret", json.dumps(body))
        self.assertNotIn("hunter2", json.dumps(body))
        for reader in (lambda: admin.http("GET", "/api/v1/groups/default/pipelines/s")[1],
                       lambda: admin.zmq("GET", "/api/v1/groups/default/pipelines/s")[1]):
            config = reader()["spec"]["nodes"]["out"]["config"]
            self.assertEqual(config["headers"]["Authorization"], "Bearer Sup3rS3cret")
            self.assertEqual(config["endpoint"], "http://ingest:hunter2@127.0.0.1:9/in")

    def test_specs_can_name_their_secrets_instead_of_holding_them(self):
        # ${env:NAME} and ${file:/PATH} in exporter headers: resolved by the
        # instance, so the spec, GET and the state file hold only the reference.
        from capture import Capture
        from harness import Admin, Engine
        capture = Capture()
        self.addCleanup(capture.close)
        data = tempfile.mkdtemp(prefix="drv-data-")
        self.addCleanup(shutil.rmtree, data, True)
        with open(os.path.join(data, "token"), "w") as f:
            f.write("Bearer fr0m-a-f1le\n")
        port = free_port()
        self.engine = Engine("engine:\n  run_dir: {RUN}\n  state_file: {OUT}/state.json\n"
                             f"  data_dirs: [{data}]\n"
                             f'  admin: {{ http: "127.0.0.1:{port}" }}\ngroups: {{}}\n')
        self.engine.start(env={"DROVER_TEST_SECRET": "fr0m-the-env"})
        self.addCleanup(self.engine.cleanup)
        admin = Admin(self.engine, port)
        admin.wait_ready()

        def spec(headers):
            return {"pipeline": {"cores": {"count": 1}, "nodes": {
                "g": {"type": "receiver:generator", "config": {"rate": 50}, "to": ["out"]},
                "out": {"type": "exporter:http", "config": {
                    "endpoint": capture.url("/in"), "batch": {"max_delay_ms": 10}, "headers": headers}}}}}

        refs = {"Authorization": f"${{file:{data}/token}}", "X-Env": "${env:DROVER_TEST_SECRET}"}
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/s", body=spec(refs))
        self.assertEqual(status, 200, body)
        wait_until(lambda: capture.accepted, 10, "a batch")
        self.assertEqual(capture.accepted[0].headers["Authorization"], "Bearer fr0m-a-f1le")
        self.assertEqual(capture.accepted[0].headers["X-Env"], "fr0m-the-env")
        shown = admin.http("GET", "/api/v1/groups/default/pipelines/s")[1]["spec"]["nodes"]["out"]["config"]
        self.assertEqual(shown["headers"], refs)
        wait_until(lambda: os.path.exists(os.path.join(self.engine.out_dir, "state.json")), 10, "the state file")
        with open(os.path.join(self.engine.out_dir, "state.json")) as f:
            state = f.read()
        self.assertIn("DROVER_TEST_SECRET", state)
        self.assertNotIn("fr0m", state)
        for headers, words in (({"A": "${file:/etc/shadow}"}, "outside engine.data_dirs"),
                               ({"A": "${vault:x}"}, "${env:NAME} or ${file:/PATH}"),
                               ({"A": "${env:1X}"}, "NAME must be")):
            status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/t", body=spec(headers))
            self.assertEqual(status, 422, body)
            self.assertIn(words, json.dumps(body))
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/t",
                                     body=spec({"A": "${env:DROVER_NOT_SET}"}) | {"step_timeout_secs": 3})
        self.assertEqual(status, 409, body)
        self.assertIn("droverd's environment has no DROVER_NOT_SET", json.dumps(body))


class Ndjson(EngineTest):
    def test_a_written_line_never_holds_a_duplicate_key(self):
        # Finding: {1: .., "1": ..} was written {"1":..,"1":..}; two invalid
        # UTF-8 keys both became "a\ufffd".
        import msgpack
        from harness import Producer
        self.start_admin_engine()
        port = free_port()
        out = f"{self.engine.out_dir}/keys.ndjson"
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": out}}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/k", body=spec)[0], 200)
        producer = Producer(f"tcp://127.0.0.1:{port}")
        self.addCleanup(producer.close)
        record = msgpack.packb({1: "int", "1": "str", "a\udcff": 1, "a\udcfe": 2}, use_bin_type=True,
                               unicode_errors="surrogateescape")
        producer.send_raw(b"\x91" + record)  # a batch of one record
        lines = wait_until(lambda: open(out).read().splitlines() if os.path.exists(out) else None, 10, "the line")

        def no_duplicates(pairs):
            keys = [k for k, _ in pairs]
            self.assertEqual(len(keys), len(set(keys)), lines[0])
            return dict(pairs)

        row = json.loads(lines[0], object_pairs_hook=no_duplicates)
        self.assertEqual(sorted(unobserved([row])[0].values(), key=str), [1, 2, "int", "str"], "nothing dropped")


class Histories(EngineTest):
    def test_a_rollouts_history_is_bounded(self):
        # Finding: 4,000 pause/resume requests grew /status from 7.8 KB to
        # 310 KB, re-sent every second to every console client.
        self.start_admin_engine()
        pipe = "/api/v1/groups/default/pipelines/h"

        def spec(version):
            return {"pipeline": {"cores": {"count": 1}, "nodes": {
                "g": {"type": "receiver:generator", "config": {"rate": 10, "record": {"v": version}}, "to": ["out"]},
                "out": {"type": "exporter:null"}},
                "policies": {"rollout": {"canary": {"cores": 1, "hold_secs": 600}}}}}

        self.assertEqual(self.admin.http("PUT", pipe, body=spec(1))[0], 200)
        status, body, _ = self.admin.http("PUT", pipe + "?wait=false", body=spec(2))
        self.assertEqual(status, 202, body)
        rid = body["rollout_id"]
        wait_until(lambda: self.admin.http("GET", f"{pipe}/rollouts/{rid}")[1]["state"] == "paused", 10, "the hold")
        accepted = 0
        for i in range(400):
            status, body = self.admin.zmq("POST", f"{pipe}/rollouts/{rid}/{'pause' if i % 2 == 0 else 'resume'}")
            accepted += status in (200, 202)
        self.assertGreater(accepted, 300, "the requests were taken")
        rollout = self.admin.http("GET", f"{pipe}/rollouts/{rid}")[1]
        self.assertLessEqual(len(rollout["history"]), 64)
        self.assertEqual(len(rollout["history"]) + rollout["history_dropped"], accepted)
        self.assertLess(len(json.dumps(self.admin.http("GET", "/status")[1])), 40000)
        self.assertEqual(self.admin.http("POST", f"{pipe}/rollouts/{rid}/abort")[0], 200)


def pb_field(number, payload):
    """A length-delimited protobuf field."""
    length, head = len(payload), bytes([number << 3 | 2])
    while True:
        head += bytes([(length & 0x7f) | (0x80 if length > 0x7f else 0)])
        length >>= 7
        if not length:
            return head + payload


def deep_logs_request(levels):
    """An ExportLogsServiceRequest whose one record's body is an AnyValue ->
    ArrayValue chain levels deep."""
    value = pb_field(1, b"x")  # AnyValue{string_value}
    for _ in range(levels):
        value = pb_field(5, pb_field(1, value))  # AnyValue{array_value: ArrayValue{values: [value]}}
    record = pb_field(5, value)  # LogRecord.body
    return pb_field(1, pb_field(2, pb_field(2, record)))


class Otlp(EngineTest):
    """receiver:otlp: protobuf decoded within bounds."""

    def test_a_deeply_nested_protobuf_request_is_refused_not_a_crash(self):
        # Finding: 5,000 AnyValue -> ArrayValue levels in ~20 KB (gzip'd)
        # overflowed protobuf-c's stack: exit 139, then CrashLoop.
        import gzip
        self.start_admin_engine()
        port = free_port()
        out = f"{self.engine.out_dir}/otlp-{{core}}.ndjson"
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": out}}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/o", body=spec)[0], 200)
        pid = self.engine.wait_instances(["default/o@1#0"])["default/o@1#0"]
        body = gzip.compress(deep_logs_request(5000))
        self.assertLess(len(body), 30000)
        for _ in range(8):
            status, answer, _, _ = curl_post(port, "/v1/logs", body, "application/x-protobuf",
                                             "-H", "Content-Encoding: gzip")
            self.assertEqual(status, 400, answer)
            self.assertIn(b"nested deeper than 32 levels", answer)
        status, answer, _, _ = curl_post(port, "/v1/logs", deep_logs_request(10), "application/x-protobuf")
        self.assertEqual(status, 200, answer)
        wait_until(lambda: read_ndjson(out.replace("{core}", "0")), 10, "the shallow request's record")
        self.assertEqual(self.engine.instances().get("default/o@1#0"), pid, "the instance never crashed")
        self.assertNotIn("killed by signal", self.engine.log_text())


class DryRuns(EngineTest):
    """dry_run=instantiate never touches what runs."""

    def test_a_probe_that_never_ends_stalls_nothing_and_kills_nothing(self):
        # Finding: droverd's loop waited 5 s in drv_probe_run (/livez stalled),
        # then judged heartbeat deadlines before reading the heartbeats that
        # queued meanwhile, and SIGKILLed every instance of every pipeline.
        import threading
        import time
        self.start_admin_engine()
        gen = {"pipeline": {"cores": {"count": 2}, "nodes": {
            "g": {"type": "receiver:generator", "config": {"rate": 100}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/gen", body=gen)[0], 200)
        pids = self.engine.wait_instances(["default/gen@1#0", "default/gen@1#1"])
        endless = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "g": {"type": "receiver:generator", "config": {"rate": 1}, "to": ["s"]},
            "s": {"type": "processor:lua", "to": ["out"], "config": {
                "max_instructions": 0,
                "script": "while true do pcall(function() while true do end end) end\n"
                          "function process(r) return r end"}},
            "out": {"type": "exporter:null"}}}}
        answer = {}

        def dry_run():
            answer["at"] = time.monotonic()
            answer["reply"] = self.admin.http("PUT", "/api/v1/groups/default/pipelines/x?dry_run=instantiate",
                                              body=endless, timeout=30)
            answer["took"] = time.monotonic() - answer["at"]

        thread = threading.Thread(target=dry_run)
        thread.start()
        wait_until(lambda: "at" in answer, 5, "the dry run to be sent")
        slowest = 0.0
        while thread.is_alive():
            start = time.monotonic()
            status, _, _ = self.admin.http("GET", "/livez", timeout=5)
            slowest = max(slowest, time.monotonic() - start)
            self.assertEqual(status, 200)
            thread.join(0.05)
        status, body, _ = answer["reply"]
        self.assertEqual(status, 422, body)
        self.assertIn("did not finish building the pipeline within 5000 ms", json.dumps(body))
        self.assertGreater(answer["took"], 4.5, "the probe had its full time")
        self.assertLess(slowest, 1.0, "/livez answered while the probe ran")
        def counts():
            status = self.admin.http("GET", "/api/v1/groups/default/pipelines/gen/status")[1]
            return {i["id"]: (i["records_in"], i["restarts"]) for i in status["instances"]}

        before = counts()
        # Two more heartbeats from each instance: a kill judged late would have shown by then.
        wait_until(lambda: all(now[0] >= before[i][0] + 2 for i, now in counts().items()), 10,
                   "heartbeats from every instance after the dry run")
        self.assertEqual({i: c[1] for i, c in counts().items()}, {i: 0 for i in before}, "no restarts")
        self.assertEqual(self.engine.instances(), pids, "no instance was killed or restarted")
        self.assertNotIn("heartbeats missed", self.engine.log_text())


if __name__ == "__main__":
    unittest.main()
