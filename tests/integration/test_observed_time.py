"""observed_time_unix_nano (docs/operations.md, "When a record was
observed"; issue 49) through the real binaries: receiver:http (NDJSON,
JSON and msgpack bodies posted with curl), receiver:zmq and
receiver:generator stamp what they take with the time they took it; a
record's own observed time is kept and a span gets none; a record read
back from a disk buffer after its worker was SIGKILLed has the time it was
first taken, not the time it was read back. receiver:kafka's formats are
checked in test_kafka_in.py, the file, journal, syslog and OTLP receivers'
in their own tests."""

import glob
import json
import os
import signal
import time
import unittest

import msgpack

from capture import Capture
from harness import EngineTest, Producer, curl_post, free_port, read_ndjson, wait_until


class ObservedTime(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.port, self.zmq_port = free_port(), free_port()

    def put(self, nodes, policies=None):
        pipeline = {"cores": {"count": 1}, "nodes": nodes}
        if policies:
            pipeline["policies"] = policies
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body={"pipeline": pipeline},
                                          timeout=30)
        self.assertEqual(status, 200, body)

    def rows(self):
        return [r for p in glob.glob(f"{self.engine.out_dir}/out.ndjson") for r in read_ndjson(p)]

    def assert_between(self, rows, before, after, what):
        for row in rows:
            observed = row.get("observed_time_unix_nano")
            self.assertIsInstance(observed, int, f"{what}: {row}")
            #  milliseconds: the stamp is the input's wall time in ms
            self.assertTrue(before // 1_000_000 * 1_000_000 <= observed <= after, f"{what}: {before} {row} {after}")

    def test_http_zmq_and_the_generator_stamp_what_they_take_and_keep_a_senders_own(self):
        out = {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out.ndjson"}}
        self.put({
            "http": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["out"]},
            "zmq": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{self.zmq_port}"}, "to": ["out"]},
            "out": out})
        before = time.time_ns()
        for body, ctype in ((b'{"via":"ndjson","n":1}\n{"via":"ndjson","n":2}\n', "application/x-ndjson"),
                            (json.dumps([{"via": "json"}, {"via": "own", "observed_time_unix_nano": 123},
                                         {"via": "span", "signal": "span", "name": "s"}]).encode(), "application/json"),
                            (msgpack.packb([{"via": "msgpack"}]), "application/msgpack")):
            status, answer, _, _ = curl_post(self.port, "/", body, ctype)
            self.assertEqual(status, 200, answer)
        producer = Producer(f"tcp://127.0.0.1:{self.zmq_port}")
        self.addCleanup(producer.close)
        producer.send([{"via": "zmq", "n": n} for n in range(3)])
        rows = wait_until(lambda: (lambda r: r if len(r) == 9 else None)(self.rows()), 20, "nine records filed")
        after = time.time_ns()
        by = {}
        for row in rows:
            by.setdefault(row["via"], []).append(row)
        self.assert_between(by["ndjson"] + by["json"] + by["msgpack"] + by["zmq"], before, after, "stamped")
        self.assertEqual(len({r["observed_time_unix_nano"] for r in by["zmq"]}), 1, "one batch, one time")
        self.assertEqual(len({r["observed_time_unix_nano"] for r in by["ndjson"]}), 1, "one body, one time")
        self.assertEqual(by["own"][0]["observed_time_unix_nano"], 123, "a sender's own kept")
        self.assertNotIn("observed_time_unix_nano", by["span"][0], "a span has no observed time")
        self.assertEqual(by["zmq"][0], {"via": "zmq", "n": 0, "observed_time_unix_nano":
                                        by["zmq"][0]["observed_time_unix_nano"]}, "nothing else added")

        before = time.time_ns()
        self.put({"gen": {"type": "receiver:generator", "config": {"rate": 0, "count": 5, "record": {"via": "gen"}},
                          "to": ["out"]}, "out": out})
        gen = wait_until(lambda: (lambda r: r if len(r) == 5 else None)(
            [r for r in self.rows() if r.get("via") == "gen"]), 20, "five generated records")
        self.assert_between(gen, before, time.time_ns(), "generated")

    def test_records_read_back_after_a_kill_keep_the_time_they_were_taken(self):
        capture = Capture()
        self.addCleanup(capture.close)
        capture.gate.clear()  # the backend holds every answer: the records stay in the log
        self.put({"zmq": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{self.zmq_port}"},
                          "to": ["out"]},
                  "out": {"type": "exporter:http", "config": {
                      "endpoint": capture.url("/in"), "format": "ndjson", "batch": {"max_delay_ms": 20},
                      "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}}}},
                 policies={"buffer": {"type": "disk", "sync": "always"}})
        pid = self.engine.wait_instances(["default/p@1#0"], 20)["default/p@1#0"]
        producer = Producer(f"tcp://127.0.0.1:{self.zmq_port}")
        self.addCleanup(producer.close)
        before = time.time_ns()
        for batch in range(3):
            producer.send([{"batch": batch, "n": n} for n in range(4)])

        def buffered():
            status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")
            return status == 200 and body.get("buffer", {}).get("records", 0) >= 12
        wait_until(buffered, 20, "twelve records in the disk buffer")
        wait_until(lambda: capture.requests, 20, "the export under way, unanswered")
        after = time.time_ns()
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: self.engine.instances().get("default/p@1#0") not in (None, pid), 20,
                   "the instance restarted")
        capture.gate.set()

        def read_back():
            with capture.lock:
                bodies = [r.body for r in capture.accepted if r.at > killed_at]
            rows = [json.loads(line) for body in bodies for line in body.splitlines() if line.strip()]
            return rows if {(r["batch"], r["n"]) for r in rows} == {(b, n) for b in range(3) for n in range(4)} \
                else None
        #  Every record again from the restarted worker, read back from the
        #  log well after it was taken: still the time it was first taken.
        rows = wait_until(read_back, 30, "every record read back and sent by the restarted worker")
        self.assert_between(rows, before, after, "read back")

if __name__ == "__main__":
    unittest.main()
