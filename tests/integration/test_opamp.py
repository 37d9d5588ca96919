"""droverd as an OpAMP agent (docs/operations.md, OpAMP, issue 27), through the real
binaries against an OpAMP server over plain HTTP (opamp_server.py:
python3-protobuf decoding and encoding the specification's messages): the
first report is whole (description, capabilities, health tree, effective
config as YAML), later ones only what changed; a killed instance shows in
the health tree, and nothing is sent while nothing changes; ReportFullState
is honoured; an unreachable server is retried with backoff and gets a full
report when it is back; a restarted droverd is the same agent; the
server's hostile answers are refused and droverd lives."""

import http.client
import json
import os
import signal
import subprocess
import threading
import unittest

import yaml

from harness import BIN, Engine, EngineTest, engine_yaml, free_port, read_ndjson, wait_until
from opamp_server import OpampServer, opamp_pb

try:
    import google.protobuf  # noqa: F401
    WHY_NOT = None
except ImportError as e:  # scripts/install-deps.sh installs python3-protobuf
    WHY_NOT = f"needs python3-protobuf ({e})"

# Contract 7.3's capabilities: ReportsStatus, AcceptsRemoteConfig, ReportsEffectiveConfig, ReportsHealth,
# ReportsRemoteConfig (AgentCapabilities of the OpAMP specification).
CAPABILITIES = 0x1 | 0x2 | 0x4 | 0x800 | 0x1000


def attributes(kvs):
    return {kv.key: kv.value.string_value for kv in kvs}


class OpampBase(EngineTest):
    """The engine and the OpAMP server the OpAMP tests share."""

    def setUp(self):
        self.server = OpampServer()
        self.addCleanup(self.server.close)

    def start(self, poll=60, server=None):
        server = server or self.server
        self.uid_file = os.path.join(self.engine_dir_hint(), "opamp-uid")
        extra = (f"  opamp:\n    endpoint: {server.url}\n    poll_interval_secs: {poll}\n"
                 f"    instance_uid_file: {self.uid_file}\n    headers: {{ Authorization: \"Bearer t0k\" }}\n")
        self.start_admin_engine(engine_extra=extra)

    def engine_dir_hint(self):
        if not hasattr(self, "_uid_dir"):
            import shutil
            import tempfile
            self._uid_dir = tempfile.mkdtemp(prefix="drv-opamp-")
            self.addCleanup(shutil.rmtree, self._uid_dir, True)
        return self._uid_dir

    def put(self, name="p", cores=1):
        spec = {"pipeline": {"cores": {"count": cores}, "nodes": {
            "gen": {"type": "receiver:generator", "config": {"rate": 10, "record": {"msg": "tick"}}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec, timeout=30)
        self.assertEqual(status, 200, body)

    def health_reports(self):
        return [m for m in self.server.received() if m.HasField("health")]


    def offer(self, text, config_hash):
        """A scripted answer carrying a remote config whose drover.yaml is text."""
        def fill(answer):
            f = answer.remote_config.config.config_map["drover.yaml"]
            f.body, f.content_type = text.encode(), "text/yaml"
            answer.remote_config.config_hash = config_hash
        return fill

    def statuses(self):
        names = {1: "APPLIED", 2: "APPLYING", 3: "FAILED"}
        return [(m.remote_config_status.last_remote_config_hash, names.get(m.remote_config_status.status),
                 m.remote_config_status.error_message)
                for m in self.server.received() if m.HasField("remote_config_status")]


@unittest.skipIf(WHY_NOT, WHY_NOT)
class Opamp(OpampBase):
    def test_the_first_report_is_whole_and_the_health_tree_follows_the_instances(self):
        self.start()
        self.put()
        first = wait_until(lambda: next(iter(self.server.received()), None), 10, "a first report")
        self.assertEqual(len(first.instance_uid), 16)
        self.assertEqual(first.instance_uid[6] >> 4, 7, "a UUIDv7")
        self.assertEqual(first.sequence_num, 1)
        self.assertEqual(first.capabilities, CAPABILITIES)
        ident = attributes(first.agent_description.identifying_attributes)
        self.assertEqual((ident["service.name"], ident["service.instance.id"].replace("-", "")),
                         ("drover", first.instance_uid.hex()))
        self.assertRegex(ident["service.version"], r"^\d+\.\d+\.\d+")
        other = attributes(first.agent_description.non_identifying_attributes)
        self.assertEqual(other["os.type"], "linux")
        self.assertTrue(other["host.name"])
        self.assertEqual(self.server.messages[0][1].get("Authorization"), "Bearer t0k")
        # The pipeline's instance, ready, in the tree and in the effective config.
        def ready_report():
            for m in reversed(self.health_reports()):
                p = m.health.component_health_map.get("default:p")
                inst = p and p.component_health_map.get("default/p@1#0")
                if inst and inst.status == "ready":
                    return m
            return None
        report = wait_until(ready_report, 10, "a report with the instance ready")
        self.assertTrue(report.health.healthy)
        pipeline = report.health.component_health_map["default:p"]
        self.assertEqual((pipeline.healthy, pipeline.status), (True, "running"))
        self.assertGreater(pipeline.component_health_map["default/p@1#0"].start_time_unix_nano, 1.6e18)
        configs = [m for m in self.server.received() if m.HasField("effective_config")]
        effective = yaml.safe_load(configs[-1].effective_config.config_map.config_map["drover.yaml"].body)
        self.assertEqual(list(effective["groups"]["default"]["pipelines"]), ["p"])
        self.assertEqual(effective["groups"]["default"]["pipelines"]["p"]["nodes"]["gen"]["config"]["rate"], 10)
        # Only what changed: the description went once.
        self.assertEqual(sum(m.HasField("agent_description") for m in self.server.received()), 1)
        status = self.admin.http("GET", "/api/v1/opamp")[1]
        self.assertEqual((status["enabled"], status["state"], status["instance_uid"].replace("-", "")),
                         (True, "connected", first.instance_uid.hex()))
        self.assertIsNotNone(status["last_contact_at"])
        with open(self.uid_file) as f:
            self.assertEqual(f.read().strip(), status["instance_uid"])

        # An instance killed: the tree shows it, then it back; then nothing while nothing changes.
        before = len(self.server.received())
        (pid,) = self.engine.instances().values()
        os.kill(pid, signal.SIGKILL)
        def restarted():
            for m in self.health_reports()[before:]:
                inst = m.health.component_health_map["default:p"].component_health_map.get("default/p@1#0")
                if inst and inst.status == "ready" and inst.start_time_unix_nano != \
                        pipeline.component_health_map["default/p@1#0"].start_time_unix_nano:
                    return m
            return None
        wait_until(restarted, 15, "a report of the restarted instance")
        wait_until(lambda: self.engine.instances(), 5, "the instance back")
        settled = len(self.server.received())
        import time
        time.sleep(10)  # the idle window the requests are counted over: a measurement, not synchronisation
        self.assertLessEqual(len(self.server.received()) - settled, 1, "no chatter while nothing changes")

    def test_report_full_state_is_honoured(self):
        self.server.script = [None, lambda a: setattr(a, "flags", 1)]  # the second answer asks for everything
        self.start()
        self.put()
        wait_until(lambda: len(self.server.received()) >= 3, 10, "three reports")
        third = self.server.received()[2]
        self.assertTrue(third.HasField("agent_description") and third.HasField("health")
                        and third.HasField("effective_config"), "a full report after ReportFullState")

    def test_an_unreachable_server_is_retried_with_backoff_then_gets_a_full_report(self):
        port = free_port()
        self.start(server=type("S", (), {"url": f"http://127.0.0.1:{port}/v1/opamp"})())
        self.put()
        wait_until(lambda: self.admin.http("GET", "/api/v1/opamp")[1]["failures"] >= 3, 15, "three failures")
        status = self.admin.http("GET", "/api/v1/opamp")[1]
        self.assertEqual(status["state"], "failing")
        self.assertIn("127.0.0.1", status["last_error"])
        self.assertLessEqual(status["failures"], 4, "backoff: 1 s, 2 s, 4 s between attempts")
        server = OpampServer(port)
        self.addCleanup(server.close)
        first = wait_until(lambda: next(iter(server.received()), None), 20, "the server reached at last")
        self.assertTrue(first.HasField("agent_description") and first.HasField("health"), "a full report")
        wait_until(lambda: self.admin.http("GET", "/api/v1/opamp")[1]["state"] == "connected", 5, "connected")

    def test_a_restarted_droverd_is_the_same_agent_and_a_new_uid_from_the_server_is_kept(self):
        new_uid = bytes(range(16))
        self.server.script = [lambda a: a.agent_identification.__setattr__("new_instance_uid", new_uid)]
        self.start()
        wait_until(lambda: any(m.instance_uid == new_uid for m in self.server.received()), 10,
                   "a report under the new uid")
        self.engine.stop()
        self.server.messages.clear()
        self.start()
        first = wait_until(lambda: next(iter(self.server.received()), None), 10, "a report after the restart")
        self.assertEqual(first.instance_uid, new_uid)

    def test_over_https_with_a_ca_file_or_insecure_skip_verify(self):
        cert, key = os.path.join(self.engine_dir_hint(), "cert.pem"), os.path.join(self.engine_dir_hint(), "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        server = OpampServer(tls=(cert, key))
        self.addCleanup(server.close)
        for tls, works in ((f"{{ ca_file: {cert} }}", True), ("{}", False), ("{ insecure_skip_verify: true }", True)):
            with self.subTest(tls=tls):
                server.messages.clear()
                extra = f"  opamp:\n    endpoint: {server.url}\n    tls: {tls}\n"
                self.start_admin_engine(engine_extra=extra)
                if works:
                    wait_until(lambda: server.received(), 10, "a report over HTTPS")
                else:
                    wait_until(lambda: self.admin.http("GET", "/api/v1/opamp")[1]["failures"] >= 1, 10, "a failure")
                    self.assertIn("certificate", self.admin.http("GET", "/api/v1/opamp")[1]["last_error"].lower())
                    self.assertEqual(server.received(), [])
                self.engine.stop()

    def test_hostile_answers_are_refused_and_droverd_lives(self):
        pb = opamp_pb()
        retry = pb.ServerToAgent(error_response=pb.ServerErrorResponse(
            type=2, error_message="busy", retry_info=pb.RetryInfo(retry_after_nanoseconds=2 * 10**9)))
        self.server.script = [b"\x0a\xff\xff\xff", b"\xff" * 64, b"\x00" * (17 << 20), 503,
                              retry.SerializeToString()]
        self.start(poll=1)
        wait_until(lambda: len(self.server.received()) >= 6, 40, "six reports")
        log = self.engine.log_text()
        self.assertIn("not a ServerToAgent message", log)
        self.assertIn("more than 16777216 bytes", log)
        self.assertIn("answered HTTP 503", log)
        self.assertIn("the server refused the report (Unavailable): busy", log)
        wait_until(lambda: self.admin.http("GET", "/api/v1/opamp")[1]["state"] == "connected", 10, "connected again")
        self.assertEqual(self.admin.http("GET", "/livez")[0], 200)
        self.assertTrue(self.server.received()[-1].HasField("agent_description"), "a full report after failures")

    # ------------------------------------------------------------ remote config

    def remote(self, cores=1, tag="v1", script=None):
        spec = {"cores": {"count": cores}, "nodes": {
            "gen": {"type": "receiver:generator", "config": {"rate": 20, "record": {"msg": "tick"}}, "to": ["t"]},
            "t": {"type": "processor:lua" if script else "processor:transform",
                  "config": {"script": script} if script else {"set": {"tag": tag}}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/{tag}-{{core}}.ndjson"}}}}
        return spec

    def start_with_state(self, poll=60):
        self.state_file = os.path.join(self.engine_dir_hint(), "state.json")
        self.uid_file = os.path.join(self.engine_dir_hint(), "opamp-uid")
        extra = (f"  state_file: {self.state_file}\n  opamp:\n    endpoint: {self.server.url}\n"
                 f"    poll_interval_secs: {poll}\n    instance_uid_file: {self.uid_file}\n")
        self.start_admin_engine(engine_extra=extra)

    def test_a_remote_config_is_applied_as_rollouts_then_reported_applied_and_not_applied_twice(self):
        self.start_with_state()
        self.put("kept")  # the API's: a remote config that does not name it leaves it alone
        wait_until(lambda: self.server.received(), 10, "a first report")
        doc = {"groups": {"default": {"pipelines": {"p": self.remote(tag="v1")}}}}
        self.server.script = [self.offer(yaml.safe_dump(doc), b"\x01\x02")]
        self.server.messages.clear()  # the next answer carries it: force a report by a change
        self.put("kept2")
        wait_until(lambda: any(s[1] == "APPLIED" for s in self.statuses()), 20, "APPLIED")
        seen = [s[1] for s in self.statuses()]
        self.assertEqual(seen[:2], ["APPLYING", "APPLIED"], seen)
        self.assertEqual(self.statuses()[-1][0], b"\x01\x02")
        status = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")[1]
        self.assertEqual((status["phase"], status["source"]), ("running", "opamp"))
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/kept/status")[1]["source"], "api")
        self.assertEqual(self.admin.http("GET", "/api/v1/opamp")[1]["remote_config"]["status"], "APPLIED")
        # droverctl says the same.
        env = dict(os.environ, DROVER_ADMIN=self.admin.endpoint)
        out = subprocess.run([os.path.join(BIN, "droverctl"), "opamp"], capture_output=True, text=True, env=env,
                             timeout=30).stdout
        self.assertRegex(out, r"state +connected")
        self.assertRegex(out, r"remote config +APPLIED \(hash 0102\)")
        table = subprocess.run([os.path.join(BIN, "droverctl"), "status"], capture_output=True, text=True, env=env,
                               timeout=30).stdout.splitlines()
        self.assertEqual(table[0].split()[-1], "SOURCE")
        self.assertEqual({line.split()[0]: line.split()[-1] for line in table[1:]},
                         {"default:p": "opamp", "default:kept": "api", "default:kept2": "api"})
        # One config that adds a pipeline and replaces another with a canary,
        # while a client posts to the replaced one: nothing it was answered 200 for is lost.
        http_port = free_port()
        ingest = lambda tag: {"cores": {"count": 2}, "nodes": {  # noqa: E731
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{http_port}"}, "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"set": {"tag": tag}}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/ingest-{{core}}-{{generation}}.ndjson"}}},
            "policies": {"rollout": {"canary": {"cores": 1, "hold_secs": 1}}}}
        self.server.script = [self.offer(yaml.safe_dump({"groups": {"default": {"pipelines": {
            "p": self.remote(tag="v1"), "web": ingest("w1")}}}}), b"\x04")]
        self.put("kept3")  # a change, so a report goes and gets the answer
        wait_until(lambda: any(s[0] == b"\x04" and s[1] == "APPLIED" for s in self.statuses()), 30, "web created")
        sent, stop = [], threading.Event()

        def post():
            conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=10)
            while not stop.is_set():
                try:
                    conn.request("POST", "/", body=json.dumps({"n": len(sent)}), headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    resp.read()
                    if resp.status == 200:
                        sent.append(len(sent))
                    if resp.getheader("Connection", "").lower() == "close":
                        conn.close()
                except (OSError, http.client.HTTPException):
                    conn.close()
        poster = threading.Thread(target=post)
        poster.start()
        try:
            wait_until(lambda: len(sent) >= 50, 10, "load flowing")
            last = yaml.safe_dump({"groups": {"default": {"pipelines": {
                "p": self.remote(tag="v1"), "web": ingest("w2"), "added": self.remote(cores=2, tag="v2")}}}})
            self.server.script = [self.offer(last, b"\x03")]
            self.put("kept4")
            wait_until(lambda: any(s[0] == b"\x03" and s[1] == "APPLIED" for s in self.statuses()), 30, "APPLIED")
            mark = len(sent)
            wait_until(lambda: len(sent) >= mark + 50, 10, "load flowing after it")
        finally:
            stop.set()
            poster.join()
        self.assertEqual([s[1] for s in self.statuses() if s[0] == b"\x03"][:2], ["APPLYING", "APPLIED"])
        status = self.admin.http("GET", "/api/v1/groups/default/pipelines/web/status")[1]
        self.assertEqual((status["generation"], status["ready_instances"], status["source"]), (2, 2, "opamp"))
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/added/status")[1]["phase"], "running")
        import glob

        def written():
            rows = []
            for path in glob.glob(f"{self.engine.out_dir}/ingest-*.ndjson"):
                rows += read_ndjson(path)
            return rows if len(rows) >= len(sent) else None
        rows = wait_until(written, 20, f"all {len(sent)} records")
        self.assertEqual(sorted(r["n"] for r in rows), sent, "every acknowledged record, once")
        self.assertEqual({r["tag"] for r in rows}, {"w1", "w2"})
        # The effective config the server hears is the new one.
        wait_until(lambda: "w2" in [m for m in self.server.received() if m.HasField("effective_config")][-1]
                   .effective_config.config_map.config_map["drover.yaml"].body.decode(), 10, "the new effective config")
        # droverd restarted: the same config, kept, not applied again (generation stays).
        self.engine.stop()
        self.server.messages.clear()
        self.server.script = [self.offer(last, b"\x03")]
        self.start_with_state()
        first = wait_until(lambda: next(iter(self.server.received()), None), 10, "a report after the restart")
        self.assertEqual((first.remote_config_status.last_remote_config_hash, first.remote_config_status.status),
                         (b"\x03", 1))
        wait_until(lambda: self.admin.http("GET", "/api/v1/groups/default/pipelines/web/status")[1]["phase"]
                   == "running", 20, "web running again")
        status = self.admin.http("GET", "/api/v1/groups/default/pipelines/web/status")[1]
        self.assertEqual((status["generation"], status["source"]), (2, "opamp"))  # kept, not applied again
        self.assertEqual(len([s for s in self.statuses() if s[1] == "APPLYING"]), 0)

    def test_an_invalid_remote_config_fails_with_the_details_and_touches_nothing(self):
        self.start_with_state()
        self.put("p")
        wait_until(lambda: self.server.received(), 10, "a first report")
        bad = {"groups": {"default": {"pipelines": {"p": {"nodes": {"x": {"type": "receiver:nope"}}}}}}}
        self.server.script = [self.offer(yaml.safe_dump(bad), b"\x09")]
        self.put("q")
        (failed,) = wait_until(lambda: [s for s in self.statuses() if s[1] == "FAILED"] or None, 20, "FAILED")
        self.assertIn("drover.yaml is not valid", failed[2])
        self.assertIn("groups.default.pipelines.p.nodes.x", failed[2])
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")[1]["generation"], 1)
        self.assertNotIn("APPLYING", [s[1] for s in self.statuses()])
        # No drover.yaml at all; 10,000 pipelines: refused the same way.
        self.server.script = [lambda a: a.remote_config.config.config_map["other.yaml"].__setattr__("body", b"x")
                              or a.remote_config.__setattr__("config_hash", b"\x0a")]
        self.put("r")
        wait_until(lambda: any("no drover.yaml entry (it has: other.yaml)" in s[2] for s in self.statuses()), 20,
                   "FAILED: no drover.yaml")
        many = {"groups": {"default": {"pipelines": {f"p{i}": self.remote() for i in range(10000)}}}}
        self.server.script = [self.offer(yaml.safe_dump(many), b"\x0b")]
        self.put("s")
        wait_until(lambda: any("max_pipelines" in s[2] for s in self.statuses()), 60, "FAILED: too many pipelines")
        # Wrong types: a list where groups go, a string for cores; YAML that is not YAML.
        for i, text in enumerate(["groups: [1, 2]\n", "groups: {default: {pipelines: {p: {cores: two}}}}\n",
                                  "groups: {a: [\n"]):
            self.server.script = [self.offer(text, bytes([0x20 + i]))]
            self.put(f"t{i}")
            wait_until(lambda: any(s[0] == bytes([0x20 + i]) and s[1] == "FAILED" for s in self.statuses()), 20,
                       f"FAILED: {text!r}")
        from harness import proc_status
        from hostile import SANITIZED
        if not SANITIZED:  # ASan keeps what is freed in quarantine: RSS says nothing there
            self.assertLess(int(proc_status(self.engine.pid, "VmHWM").split()[0]), 256 * 1024, "droverd's peak RSS")
        self.assertEqual(self.admin.http("GET", "/livez")[0], 200)

    def test_a_remote_config_whose_new_generation_fails_is_rolled_back_and_reported_failed(self):
        self.start_with_state()
        wait_until(lambda: self.server.received(), 10, "a first report")
        good = {"groups": {"default": {"pipelines": {"p": self.remote(cores=2, tag="good")}}}}
        self.server.script = [self.offer(yaml.safe_dump(good), b"\x01")]
        self.put("nudge1")
        wait_until(lambda: any(s[1] == "APPLIED" for s in self.statuses()), 20, "APPLIED")
        broken = self.remote(cores=2, tag="good", script="function process(r) error('boom') end")
        broken["policies"] = {"rollout": {"canary": {"cores": 1, "hold_secs": 2, "max_error_ratio": 0.01}}}
        self.server.script = [self.offer(yaml.safe_dump({"groups": {"default": {"pipelines": {"p": broken}}}}),
                                         b"\x02")]
        self.put("nudge2")
        (failed,) = wait_until(lambda: [s for s in self.statuses() if s[0] == b"\x02" and s[1] == "FAILED"] or None,
                               60, "FAILED")
        self.assertIn("default:p", failed[2])
        self.assertIn("canary failed: error ratio", failed[2])  # the canary's verdict
        status = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")[1]
        self.assertEqual((status["generation"], status["phase"]), (1, "running"))
        effective = [m for m in self.server.received() if m.HasField("effective_config")][-1]
        self.assertNotIn("boom", effective.effective_config.config_map.config_map["drover.yaml"].body.decode())

    def test_a_bad_opamp_config_is_refused_naming_the_key(self):
        self.http_port = free_port()
        engine = Engine(engine_yaml(engine_extra="  opamp:\n    endpoint: ftp://x\n    poll_interval_secs: 0\n")
                        .replace("HTTP", str(self.http_port)))
        self.addCleanup(engine.cleanup)
        out = subprocess.run([os.path.join(BIN, "droverd"), "--check", "-c", engine.config_path],
                             capture_output=True, text=True, timeout=10)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("engine.opamp.endpoint", out.stderr)


class OpampElasticServer(EngineTest):
    """The same against an OpAMP server whose messages are decoded and
    encoded by the schemas @elastic/opamp-client-node ships (npm, pinned in
    tests/otel-js); the package's own client proves it a real OpAMP server."""

    @classmethod
    def setUpClass(cls):
        from test_otel_sdk import install_client
        why = install_client()
        if why:
            raise unittest.SkipTest(why)

    def setUp(self):
        import json
        import threading
        from test_otel_sdk import CLIENT
        self.script = os.path.join(CLIENT, "opamp_server.js")
        check = subprocess.run(["node", self.script, "selfcheck"], capture_output=True, text=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertEqual(json.loads(check.stdout)["selfcheck"], "ok")
        self.server = subprocess.Popen(["node", self.script, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True)
        self.addCleanup(lambda: (self.server.stdin.close(), self.server.wait(10), self.server.stdout.close()))
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(json.loads(x) for x in self.server.stdout),
                         daemon=True).start()
        port = wait_until(lambda: next((m["port"] for m in list(self.lines) if "port" in m), None), 15, "the port")
        extra = (f"  opamp:\n    endpoint: http://127.0.0.1:{port}/v1/opamp\n    poll_interval_secs: 1\n"
                 f"    headers: {{ Authorization: \"Bearer elastic\" }}\n")
        self.start_admin_engine(engine_extra=extra)

    def messages(self):
        return [m["message"] for m in list(self.lines) if "message" in m]

    def test_drover_reports_to_it_and_applies_its_remote_config(self):
        import json
        first = wait_until(lambda: next(iter(self.messages()), None), 10, "a first report")
        ident = {kv["key"]: kv["value"]["stringValue"] for kv in first["agentDescription"]["identifyingAttributes"]}
        self.assertEqual(ident["service.name"], "drover")
        self.assertEqual(int(first["capabilities"]), CAPABILITIES)
        self.assertIn("healthy", first["health"])
        self.assertEqual([m["authorization"] for m in self.lines if "message" in m][0], "Bearer elastic")
        spec = {"cores": {"count": 1}, "nodes": {
            "gen": {"type": "receiver:generator", "config": {"rate": 5}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}
        offer = {"remote_config": yaml.safe_dump({"groups": {"default": {"pipelines": {"fleet": spec}}}}),
                 "hash": "c0ffee"}
        self.server.stdin.write(json.dumps(offer) + "\n")
        self.server.stdin.flush()

        def applied():
            for m in self.messages():
                s = m.get("remoteConfigStatus", {})
                if s.get("status") == "RemoteConfigStatuses_APPLIED":
                    return s
            return None
        status = wait_until(applied, 20, "APPLIED, as the package's schemas read it")
        self.assertEqual(status["lastRemoteConfigHash"], "wP/u")  # base64 of c0ffee
        st = self.admin.http("GET", "/api/v1/groups/default/pipelines/fleet/status")[1]
        self.assertEqual((st["phase"], st["source"]), ("running", "opamp"))
        import base64

        def effective_names_it():
            for m in self.messages():
                body = m.get("effectiveConfig", {}).get("configMap", {}).get("configMap", {}).get("drover.yaml", {})
                groups = yaml.safe_load(base64.b64decode(body["body"])).get("groups") if body else None
                if groups and "fleet" in (groups.get("default") or {}).get("pipelines", {}):
                    return True
            return False
        wait_until(effective_names_it, 10, "the effective config naming it")

if __name__ == "__main__":
    unittest.main(verbosity=2)
