"""Counters through crashes (docs/operations.md, "Counters through a crash"),
through the real binaries: with a disk buffer, a worker SIGKILLed
mid-stream, and droverd killed together with every child, leave counters
that reconcile once everything has settled: every node's out equals each
successor's in, every exporter delivered what it took in, and the
pipeline's totals are its instance's nodes' (droverd forgets the killed
process's last heartbeat when its successor goes on from the counts saved
with the buffer)."""

import os
import signal
import tempfile
import unittest

from capture import Capture
from harness import Admin, EngineTest, engine_yaml, free_port, wait_until
from test_durability import Sender, ids_in

EDGES = [("in", "v"), ("v", "out"), ("v", "keep")]


class CountsThroughCrashes(EngineTest):
    def setUp(self):
        self.capture = Capture()
        self.addCleanup(self.capture.close)
        self.http_port, self.otlp_port = free_port(), free_port()

    def config(self, kept):
        pipelines = f"""
      counted:
        cores: {{count: 1}}
        nodes:
          in: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{self.otlp_port}"}}, to: [v]}}
          v: {{type: "processor:transform", config: {{set: {{v: 1}}}}, to: [out, keep]}}
          out: {{type: "exporter:otlp", config: {{endpoint: "{self.capture.url()}", encoding: json,
                 batch: {{max_delay_ms: 20, max_records: 200}}, retry: {{initial_ms: 50, max_ms: 200, max_elapsed_secs: 0}}}}}}
          keep: {{type: "exporter:file", config: {{path: "{kept}"}}}}
        policies:
          buffer: {{type: disk, sync: batch, sync_interval_ms: 20}}
"""
        return engine_yaml(pipelines).replace("HTTP", str(self.http_port))

    def status(self, admin):
        status, body, _ = admin.http("GET", "/api/v1/groups/default/pipelines/counted/status")
        return body if status == 200 else None

    def delivered(self):
        return {i for body in self.capture.bodies() for i in ids_in(body)}

    def assert_reconciled(self, status, acked):
        [inst] = status["instances"]
        nodes = inst["nodes"]
        for a, b in EDGES:
            self.assertEqual(nodes[a]["records_out"], nodes[b]["records_in"], f"{a}.out vs {b}.in: {nodes}")
        for exporter in ("out", "keep"):
            self.assertEqual(nodes[exporter]["records_in"], nodes[exporter]["records_out"],
                             f"{exporter} delivered what it took in: {nodes}")
        self.assertGreaterEqual(nodes["in"]["records_in"], len(acked), nodes)
        totals = status["totals"]
        self.assertEqual(totals["records_in"], nodes["in"]["records_in"], (totals, nodes))
        # Each record once, however many exporters it fans out to: counted
        # at the first its copies reach, v's first target (docs/operations.md, "Counters").
        self.assertEqual(totals["records_out"], nodes["out"]["records_out"], (totals, nodes))

    def settled(self, admin, acked):
        wait_until(lambda: not set(acked) - self.delivered(), 60,
                   f"every one of {len(acked)} acknowledged records at the backend")

        last = {}

        def quiet():
            s = last["status"] = self.status(admin)
            if not s or s["buffer"]["records"] != 0 or len(s["instances"]) != 1:
                return None
            nodes = s["instances"][0]["nodes"]
            if not nodes or nodes["out"]["backlog_records"] or nodes["keep"]["backlog_records"]:
                return None
            # the counters settle with the log: a heartbeat after the last delivery
            return s if nodes["out"]["records_in"] == nodes["out"]["records_out"] else None
        try:
            return wait_until(quiet, 30, "the buffer settled and counted")
        except AssertionError:
            self.fail(f"the buffer did not settle, or its counters: {last.get('status')}")

    def test_a_worker_killed_mid_stream_twice_leaves_counters_that_reconcile(self):
        engine = self.start_engine(self.config(os.path.join(tempfile.mkdtemp(prefix="drv-counts-"), "kept.ndjson")))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        sender = Sender(self.otlp_port, "w")
        sender.start()
        for round_ in range(2):
            pid = engine.wait_instances(["default/counted@1#0"], 20)["default/counted@1#0"]
            self.capture.gate.clear()  # the backend stalls: the log holds what is not delivered
            wait_until(lambda: len(sender.acked) >= 400 * (2 * round_ + 1), 20, "acknowledged, backend stalled")
            self.capture.gate.set()
            wait_until(lambda: len(sender.acked) >= 400 * (2 * round_ + 2), 20, "acknowledged, backend back")
            #  Counted, delivered and heard of, with more coming: the kill
            #  comes mid-stream, after counts were saved with the buffer.
            wait_until(lambda: (lambda s: s and s["instances"] and (s["instances"][0]["nodes"] or {}).get(
                "out", {}).get("records_out", 0) >= 400 * (round_ + 1))(self.status(admin)), 20, "deliveries counted")
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: engine.instances().get("default/counted@1#0") not in (None, pid), 20,
                       "the instance restarted")
        wait_until(lambda: len(sender.acked) >= 2000, 20, "acknowledged after the restarts")
        sender.stop()
        status = self.settled(admin, sender.acked)
        self.assertGreaterEqual(status["instances"][0]["restarts"], 2)
        self.assert_reconciled(status, sender.acked)
        self.assertEqual(engine.log_text().count("counts of a crashed process taken back"), 2)

    def test_droverd_and_every_child_killed_mid_stream_leave_counters_that_reconcile(self):
        engine = self.start_engine(self.config(os.path.join(tempfile.mkdtemp(prefix="drv-counts-"), "kept.ndjson")))
        acked = []
        for round_ in range(2):
            admin = Admin(engine, self.http_port)
            admin.wait_ready(20)
            sender = Sender(self.otlp_port, f"t{round_}")
            sender.start()
            self.capture.gate.clear()
            wait_until(lambda: len(sender.acked) >= 400, 20, "acknowledged, backend stalled")
            self.capture.gate.set()
            wait_until(lambda: len(sender.acked) >= 800, 20, "acknowledged, backend back")
            engine.signal(signal.SIGKILL)  # droverd is PID 1 of its namespace: every child goes with it
            engine.wait_exit(10)
            sender.stop()
            acked += sender.acked
            engine.log.close()
            engine.start()
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        status = self.settled(admin, acked)
        #  Every acknowledged record counted in, across both kills: the
        #  counts went on from what each killed tree saved.
        self.assert_reconciled(status, acked)


if __name__ == "__main__":
    unittest.main()
