"""What an OpAMP server, or someone posing as one, cannot make droverd do
(docs/security.md, "OpAMP"): decode an answer into far more memory than
its bytes, learn the secrets in the specs, or get AgentDescription sent
over and over; and what droverd reports from its first message on."""

import os
import unittest

import yaml

from harness import engine_yaml, free_port, wait_until
from hostile import SANITIZED, rss_kb
from test_opamp import WHY_NOT, OpampBase


@unittest.skipIf(WHY_NOT, WHY_NOT)
class OpampHostile(OpampBase):
    def test_an_answer_that_would_decode_to_far_more_than_its_bytes_is_refused_unread(self):
        def varint(n):
            out = b""
            while n >= 0x80:
                out, n = out + bytes([n & 0x7f | 0x80]), n >> 7
            return out + bytes([n])
        entries = b"\x0a\x00" * (4 << 20)  # 4 Mi empty config_map entries: 8 MiB that protobuf-c makes ~250 MB of
        remote = b"\x0a" + varint(len(entries)) + entries
        self.server.script = [b"\x1a" + varint(len(remote)) + remote]
        self.start(poll=1)
        self.engine.wait_log(r"not a ServerToAgent message, refused unread: ", 20)
        if not SANITIZED:  # ASan keeps what is freed: RSS says nothing there
            self.assertLess(rss_kb(self.engine.pid), 100 << 10, "droverd decoded the bloated answer")
        wait_until(lambda: self.admin.http("GET", "/api/v1/opamp")[1]["state"] == "connected", 10, "connected again")

    def test_declared_pipelines_are_reported_from_the_first_message_redacted_and_described_once(self):
        backend = free_port()  # nobody listens: the pipeline need not deliver for this
        pipelines = f"""
      shipped:
        nodes:
          gen: {{type: "receiver:generator", config: {{rate: 1, record: {{msg: tick}}}}, to: [out]}}
          out: {{type: "exporter:http", config: {{endpoint: "http://ops:hunter2@127.0.0.1:{backend}/in",
                 headers: {{Authorization: "Bearer s3cr3t-t0ken"}}}}}}
"""
        self.uid_file = os.path.join(self.engine_dir_hint(), "opamp-uid")
        self.http_port = free_port()
        extra = (f"  opamp:\n    endpoint: {self.server.url}\n    poll_interval_secs: 1\n"
                 f"    instance_uid_file: {self.uid_file}\n")
        self.start_engine(engine_yaml(pipelines, extra).replace("HTTP", str(self.http_port)))
        wait_until(lambda: len(self.server.received()) >= 6, 30, "six reports")
        reports = self.server.received()
        first = yaml.safe_load(reports[0].effective_config.config_map.config_map["drover.yaml"].body)
        self.assertEqual(list(first["groups"]["default"]["pipelines"]), ["shipped"], "declared, reported at once")
        for m in reports:
            wire = m.SerializeToString()
            self.assertNotIn(b"hunter2", wire)
            self.assertNotIn(b"s3cr3t-t0ken", wire)
        self.assertEqual(sum(m.HasField("agent_description") for m in reports), 1,
                         [m.HasField("agent_description") for m in reports])


    def test_a_remote_config_with_keys_nobody_reads_fails_naming_them(self):
        self.start(poll=1)
        self.server.script = [self.offer("engine: {run_dir: /tmp/elsewhere}\ngrups: {}\ngroups: {}\n", b"k1")]
        failed = wait_until(lambda: [s for s in self.statuses() if s[1] == "FAILED"], 20, "FAILED")
        self.assertIn("engine: engine settings are not taken from here", failed[-1][2])
        self.assertIn('grups: unknown key "grups"', failed[-1][2])

    def test_texts_are_cut_between_characters_never_inside_one(self):
        self.start(poll=1)
        key = "ключ" * 700  # 5,600 bytes of two-byte characters, past every bound a message has
        text = ("groups:\n  default:\n    pipelines:\n      p:\n        nodes:\n"
                "          gen:\n            type: receiver:generator\n            to: [out]\n"
                f"            config:\n              ? {key}\n              : 1\n"  # explicit: YAML caps implicit keys at 1024
                "          out: {type: \"exporter:null\"}\n")
        self.server.script = [self.offer(text, b"k2")]
        failed = wait_until(lambda: [s for s in self.statuses() if s[1] == "FAILED"], 20,
                            "FAILED, reported in a message the server could parse")
        self.assertIn("ключ", failed[-1][2])
        status, body, _ = self.admin.http("GET", "/api/v1/opamp")
        self.assertEqual(status, 200)
        self.assertIn("ключ", body["remote_config"]["error"])


    def test_a_remote_config_reads_only_the_environment_the_local_file_allows(self):
        self.uid_file = os.path.join(self.engine_dir_hint(), "opamp-uid")
        self.http_port = free_port()
        extra = (f"  opamp:\n    endpoint: {self.server.url}\n    poll_interval_secs: 1\n"
                 f"    instance_uid_file: {self.uid_file}\n    allowed_env: [DRV_SHIPPING_TOKEN]\n")
        self.start_engine(engine_yaml("{}", extra).replace("HTTP", str(self.http_port)),
                          env={"DRV_SHIPPING_TOKEN": "ok", "DRV_PRIVATE": "not for the server"})

        def remote(variable):
            return ("groups:\n  default:\n    pipelines:\n      shipped:\n        nodes:\n"
                    "          gen: {type: \"receiver:generator\", config: {rate: 1}, to: [out]}\n"
                    f"          out: {{type: \"exporter:http\", config: {{endpoint: \"http://127.0.0.1:{free_port()}/\","
                    f" headers: {{Authorization: \"${{env:{variable}}}\"}}}}}}\n")
        self.server.script = [self.offer(remote("DRV_PRIVATE"), b"e1")]
        failed = wait_until(lambda: [s for s in self.statuses() if s[1] == "FAILED"], 20, "FAILED")
        self.assertIn("${env:DRV_PRIVATE}: not among the variables engine.opamp.allowed_env lists", failed[-1][2])
        self.server.script = [self.offer(remote("DRV_SHIPPING_TOKEN"), b"e2")]
        wait_until(lambda: [s for s in self.statuses() if s[1] == "APPLIED"], 30, "the allowed one APPLIED")


    def test_a_remote_config_keeps_an_api_change_until_its_entry_changes(self):
        self.start(poll=1)
        path = "/api/v1/groups/default/pipelines/p"

        def remote(rate, extra=""):
            return ("groups:\n  default:\n    pipelines:\n"
                    f"      p:\n        nodes:\n          g: {{type: receiver:generator, config: {{rate: {rate}}}, to: [o]}}\n"
                    "          o: {type: exporter:null}\n" + extra)
        rate = lambda: self.admin.http("GET", path)[1]["spec"]["nodes"]["g"]["config"]["rate"]
        source = lambda: self.admin.http("GET", path + "/status")[1]["source"]
        applied = lambda h: wait_until(lambda: [s for s in self.statuses() if s[0] == h and s[1] == "APPLIED"], 30,
                                       f"{h} APPLIED")
        self.server.script = [self.offer(remote(1), b"r1")]
        applied(b"r1")
        spec = self.admin.http("GET", path)[1]["spec"]
        spec["nodes"]["g"]["config"]["rate"] = 7
        self.assertEqual(self.admin.http("PUT", path, body={"pipeline": spec})[0], 200)
        self.assertEqual((source(), rate()), ("api", 7))
        # A new remote config in which p's entry did not change: the API's change stands.
        q = ("      q:\n        nodes:\n          g: {type: receiver:generator, config: {rate: 1}, to: [o]}\n"
             "          o: {type: exporter:null}\n")
        self.server.script = [self.offer(remote(1, q), b"r2")]
        applied(b"r2")
        self.assertEqual((source(), rate()), ("api", 7))
        # p's entry changed: the remote config's wins, and says so.
        self.server.script = [self.offer(remote(3, q), b"r3")]
        applied(b"r3")
        self.assertEqual((source(), rate()), ("opamp", 3))
        self.assertIn("pipeline=default:p changed in the remote config: its entry replaces the API's change",
                      self.engine.log_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
