"""Durable pipelines (contract 7.1, issue 25) through the real binaries:
with policies.buffer type disk, what receiver:otlp answered 200 is in the
write-ahead log first, so that SIGKILLing droverd together with every child
(its PID namespace dies with it, as a container does) loses none of it: the
next droverd, started with the same config, reads the log back and the
backend gets every acknowledged record at least once."""

import http.client
import json
import os
import signal
import threading
import time
import unittest

from capture import Capture
from harness import Admin, Engine, EngineTest, engine_yaml, free_port, wait_until

RECORDS_PER_REQUEST = 20


def otlp_logs(ids):
    return json.dumps({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "durable"}}]},
        "scopeLogs": [{"scope": {"name": "t"}, "logRecords": [
            {"timeUnixNano": "1700000000000000000", "body": {"stringValue": i}} for i in ids]}]}]}).encode()


def ids_in(body):
    """The log bodies of an OTLP/JSON logs request."""
    doc = json.loads(body)
    return [r["body"]["stringValue"]
            for rl in doc.get("resourceLogs", []) for sl in rl.get("scopeLogs", []) for r in sl.get("logRecords", [])]


class Sender(threading.Thread):
    """Posts OTLP/JSON logs requests one after another (a fresh id for every
    record) and keeps the ids of those answered 200; anything else (a 429,
    a connection cut by the kill) is not acknowledged and not counted."""

    def __init__(self, port, prefix):
        super().__init__(daemon=True)
        self.port, self.prefix = port, prefix
        self.acked, self.answers = [], {}
        self.stopping = threading.Event()
        self.n = 0

    def run(self):
        conn = None
        while not self.stopping.is_set():
            ids = [f"{self.prefix}-{self.n}-{k}" for k in range(RECORDS_PER_REQUEST)]
            self.n += 1
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("POST", "/v1/logs", otlp_logs(ids), {"Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                self.answers[response.status] = self.answers.get(response.status, 0) + 1
                if response.status == 200:
                    self.acked += ids
            except (OSError, http.client.HTTPException):
                conn = None
                self.answers["error"] = self.answers.get("error", 0) + 1
                time.sleep(0.01)  # droverd is down: retry shortly (not a synchronisation)

    def stop(self):
        self.stopping.set()
        self.join(15)


class Durability(EngineTest):
    def setUp(self):
        self.capture = Capture()
        self.addCleanup(self.capture.close)
        self.http_port, self.otlp_port = free_port(), free_port()

    def config(self, buffer="{type: disk, sync: batch, sync_interval_ms: 20}", cores=2):
        pipelines = f"""
      durable:
        cores: {{count: {cores}}}
        nodes:
          in: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{self.otlp_port}"}}, to: [out]}}
          out: {{type: "exporter:otlp", config: {{endpoint: "{self.capture.url()}", encoding: json,
                 batch: {{max_delay_ms: 20}}, retry: {{initial_ms: 50, max_ms: 200, max_elapsed_secs: 0}}}}}}
        policies:
          buffer: {buffer}
"""
        return engine_yaml(pipelines).replace("HTTP", str(self.http_port))

    def delivered(self):
        seen = set()
        for body in self.capture.bodies():
            seen.update(ids_in(body))
        return seen

    def status(self, admin):
        status, body, _ = admin.http("GET", "/api/v1/groups/default/pipelines/durable/status")
        return body if status == 200 else None

    def test_nothing_acknowledged_is_lost_when_droverd_and_every_child_are_killed_three_times(self):
        config = self.config()
        engine = self.start_engine(config)
        acked, replayed = [], 0
        for round_ in range(3):
            admin = Admin(engine, self.http_port)
            admin.wait_ready(20)
            sender = Sender(self.otlp_port, f"r{round_}")
            sender.start()
            #  The backend stalls half the time: the log holds what is
            #  acknowledged and not yet exported when the kill comes.
            self.capture.gate.clear()
            wait_until(lambda: len(sender.acked) >= 400, 20, "requests acknowledged with the backend stalled")
            self.capture.gate.set()
            wait_until(lambda: len(sender.acked) >= 800, 20, "requests acknowledged with the backend back")
            self.capture.gate.clear()
            wait_until(lambda: len(sender.acked) >= 1200, 20, "more acknowledged, stalled again")
            status = self.status(admin)
            replayed = max(replayed, status["buffer"].get("replayed_records") or 0)
            engine.signal(signal.SIGKILL)  # droverd is PID 1 of its namespace: every child goes with it
            engine.wait_exit(10)
            sender.stop()
            acked += sender.acked
            self.assertNotIn(500, sender.answers)
            engine.log.close()
            engine.start()
        self.capture.gate.set()
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        self.assertGreater(len(acked), 3000)
        wait_until(lambda: not set(acked) - self.delivered(), 60,
                   f"every one of {len(acked)} acknowledged records at the backend")
        #  The log was read back (by the second round at the latest) and empties once exported.
        final = wait_until(lambda: (lambda s: s if s and s["buffer"]["records"] == 0 else None)(self.status(admin)),
                           30, "the buffer settled")
        self.assertEqual(final["buffer"]["type"], "disk")
        self.assertGreater(max(replayed, final["buffer"]["replayed_records"]), 0, final["buffer"])


if __name__ == "__main__":
    unittest.main()
