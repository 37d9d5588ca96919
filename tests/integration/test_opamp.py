"""droverd as an OpAMP agent (contract 7.3, issue 27), through the real
binaries against an OpAMP server over plain HTTP (opamp_server.py:
python3-protobuf decoding and encoding the specification's messages): the
first report is whole (description, capabilities, health tree, effective
config as YAML), later ones only what changed; a killed instance shows in
the health tree, and nothing is sent while nothing changes; ReportFullState
is honoured; an unreachable server is retried with backoff and gets a full
report when it is back; a restarted droverd is the same agent; the
server's hostile answers are refused and droverd lives."""

import os
import signal
import unittest

import yaml

from harness import Engine, EngineTest, engine_yaml, free_port, wait_until
from opamp_server import OpampServer, opamp_pb

try:
    import google.protobuf  # noqa: F401
    WHY_NOT = None
except ImportError as e:  # scripts/install-deps.sh installs python3-protobuf
    WHY_NOT = f"needs python3-protobuf ({e})"

REPORTS_STATUS, REPORTS_EFFECTIVE_CONFIG, REPORTS_HEALTH = 0x1, 0x4, 0x800


def attributes(kvs):
    return {kv.key: kv.value.string_value for kv in kvs}


@unittest.skipIf(WHY_NOT, WHY_NOT)
class Opamp(EngineTest):
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

    def test_the_first_report_is_whole_and_the_health_tree_follows_the_instances(self):
        self.start()
        self.put()
        first = wait_until(lambda: next(iter(self.server.received()), None), 10, "a first report")
        self.assertEqual(len(first.instance_uid), 16)
        self.assertEqual(first.instance_uid[6] >> 4, 7, "a UUIDv7")
        self.assertEqual(first.sequence_num, 1)
        self.assertEqual(first.capabilities & (REPORTS_STATUS | REPORTS_EFFECTIVE_CONFIG | REPORTS_HEALTH),
                         REPORTS_STATUS | REPORTS_EFFECTIVE_CONFIG | REPORTS_HEALTH)
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
        time.sleep(6)  # an idle window: a measurement, not synchronisation
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

    def test_a_bad_opamp_config_is_refused_naming_the_key(self):
        self.http_port = free_port()
        engine = Engine(engine_yaml(engine_extra="  opamp:\n    endpoint: ftp://x\n    poll_interval_secs: 0\n")
                        .replace("HTTP", str(self.http_port)))
        self.addCleanup(engine.cleanup)
        import subprocess
        from harness import BIN
        out = subprocess.run([os.path.join(BIN, "droverd"), "--check", "-c", engine.config_path],
                             capture_output=True, text=True, timeout=10)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("engine.opamp.endpoint", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
