"""Branches that never wait for each other (issue 37): an exporter whose
backend is down holds what it cannot deliver in its own queue while the
other exporters of the pipeline go on; revived, its backend gets the whole
backlog in order; with when_full: drop_oldest a small queue never pushes
back and counts what it drops. Memory buffers, over HTTP and the broker, in
a fan-out and behind processor:route."""

import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import unittest

from capture import Capture
from harness import (Admin, EngineTest, Producer, curl_post, engine_yaml, free_port, ndjson, read_ndjson,
                     wait_until)

BATCH = {"max_records": 50, "max_delay_ms": 20}
RETRY = {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}


class Queues(EngineTest):
    def setUp(self):
        #  Heartbeats as deployed: 100 ms ones are missed by a machine busy
        #  with the parallel suite, and droverd kills the instance for it.
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 1000\n")
        self.out = self.engine.out_dir
        self.dead = free_port()  # nothing listens: connections are refused until revive()

    def revive(self):
        capture = Capture(port=self.dead)
        self.addCleanup(capture.close)
        return capture

    policies = None  # a disk buffer in DiskQueues

    def fan(self, receiver, queue=None):
        """A receiver fanned out to a file and to an HTTP backend that is down."""
        http = {"endpoint": f"http://127.0.0.1:{self.dead}/in", "batch": BATCH, "retry": RETRY}
        if queue:
            http["queue"] = queue
        spec = {"cores": {"count": 1}, "nodes": {
            "in": {**receiver, "to": ["file", "http"]},
            "file": {"type": "exporter:file", "config": {"path": f"{self.out}/fan.ndjson"}},
            "http": {"type": "exporter:http", "config": http}}}
        if self.policies:
            spec["policies"] = self.policies
        return spec

    def put(self, receiver, queue=None):
        spec = {"pipeline": self.fan(receiver, queue)}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/fan", body=spec, timeout=30)
        self.assertEqual(status, 200, body)

    def filed(self):
        return read_ndjson(os.path.join(self.out, "fan.ndjson"))

    def queue(self):
        status = self.admin.http("GET", "/api/v1/groups/default/pipelines/fan/status")[1]
        return status["instances"][0]["nodes"]["http"]["queue"]

    def delivered(self, capture):
        return [json.loads(line) for body in capture.bodies() for line in body.decode().splitlines() if line]

    def post_all(self, port, requests, per_request):
        for r in range(requests):
            records = [{"i": r * per_request + k} for k in range(per_request)]
            status, body, _, _ = curl_post(port, "/", ndjson(records), "application/x-ndjson")
            self.assertEqual(status, 200, f"request {r} answered {status}: {body[:200]}")

    def test_a_dead_backend_beside_a_file_over_http_stops_nothing_and_gets_its_backlog_in_order(self):
        port = free_port()
        self.put({"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}}, {"max_bytes": 8 << 20})
        self.post_all(port, 300, 20)  # 6,000 records; the dead exporter alone once held 16 batches before 429s
        wait_until(lambda: len(self.filed()) >= 6000, 20, "every record in the file beside the dead backend")
        self.assertEqual(sorted(r["i"] for r in self.filed()), list(range(6000)))
        queued = wait_until(lambda: (lambda q: q if q["records"] >= 6000 - 50 else None)(self.queue()), 20,
                            "the dead exporter's queue holding the backlog")
        self.assertGreater(queued["bytes"], 0)
        self.assertEqual(queued["dropped_records"], 0)
        #  Past its 16 batches it fell behind: the log (a disk buffer's, or
        #  the memory log) keeps the rest, each input once, as it came.
        self.engine.wait_log(r"exporter behind: the others go on, it reads the log again from its position node=http")
        capture = self.revive()
        got = wait_until(lambda: (lambda d: d if len(d) >= 6000 else None)(self.delivered(capture)), 20,
                         "the revived backend's backlog")
        self.assertEqual([r["i"] for r in got], list(range(6000)), "the whole backlog, in order, once")
        wait_until(lambda: self.queue()["records"] == 0 and self.queue()["bytes"] == 0, 20, "the queue empty")

    def test_a_dead_backend_beside_a_file_over_the_broker_stops_nothing(self):
        port = free_port()
        self.put({"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}}, {"max_bytes": 8 << 20})
        producer = Producer(f"tcp://127.0.0.1:{port}")
        self.addCleanup(producer.close)
        for b in range(1000):  # 10,000 records: the broker's credit once stopped at the dead exporter's 16 batches
            producer.send([{"i": b * 10 + k} for k in range(10)])
        wait_until(lambda: len(self.filed()) >= 10000, 10, "every record in the file beside the dead backend")
        self.assertEqual(sorted(r["i"] for r in self.filed()), list(range(10000)))
        capture = self.revive()
        got = wait_until(lambda: (lambda d: d if len(d) >= 10000 else None)(self.delivered(capture)), 30,
                         "the revived backend's backlog")
        self.assertEqual(sorted(r["i"] for r in got), list(range(10000)), "the whole backlog, once")

    def test_route_branches_alike_a_dead_route_stops_nothing_of_the_others(self):
        port = free_port()
        http = {"endpoint": f"http://127.0.0.1:{self.dead}/in", "batch": BATCH, "retry": RETRY,
                "queue": {"max_bytes": 8 << 20}}
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["r"]},
            "r": {"type": "processor:route", "config": {
                "routes": [{"when": {"field": "team", "op": "eq", "value": "a"}, "to": ["file"]},
                           {"when": {"field": "team", "op": "eq", "value": "b"}, "to": ["http"]}]}},
            "file": {"type": "exporter:file", "config": {"path": f"{self.out}/fan.ndjson"}},
            "http": {"type": "exporter:http", "config": http}}}}
        if self.policies:
            spec["pipeline"]["policies"] = self.policies
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/fan", body=spec, timeout=30)
        self.assertEqual(status, 200, body)
        for r in range(200):  # 2,000 records to each team; team b's backend is down
            records = [{"i": r * 10 + k, "team": team} for k in range(10) for team in ("a", "b")]
            status, body, _, _ = curl_post(port, "/", ndjson(records), "application/x-ndjson")
            self.assertEqual(status, 200, f"request {r} answered {status}: {body[:200]}")
        wait_until(lambda: len(self.filed()) >= 2000, 20, "team a's every record beside team b's dead backend")
        self.assertEqual(sorted(r["i"] for r in self.filed()), list(range(2000)))
        self.assertEqual({r["team"] for r in self.filed()}, {"a"})
        capture = self.revive()
        got = wait_until(lambda: (lambda d: d if len(d) >= 2000 else None)(self.delivered(capture)), 20,
                         "team b's backlog")
        self.assertEqual([r["i"] for r in got], list(range(2000)), "team b's records, in order, once")

    def test_a_generators_batches_kept_for_a_dead_backend_come_back_exactly(self):
        # Generated batches kept for the exporter behind are what makes them
        # again (receiver:generator's replay), template included: replaced
        # by a generation with another template, the pipeline hands them
        # over, and the revived backend gets the records the file got, each
        # once, field for field (observed time too), as the old template
        # made them (the batches the exporter held and the log's inputs come
        # in two runs across a handover: compared by seq).
        if self.policies:
            self.skipTest("with a disk buffer a generated batch is run with the last input fed, not kept alone")
        generator = {"type": "receiver:generator", "config": {"rate": 0, "count": 6000, "record": {"m": "x"}}}
        self.put(generator, {"max_bytes": 8 << 20})
        wait_until(lambda: len(self.filed()) >= 6000, 20, "every record in the file beside the dead backend")
        self.engine.wait_log(r"exporter behind: the others go on, it reads the log again from its position node=http")
        generator["config"]["record"] = {"m": "y"}
        self.put(generator, {"max_bytes": 8 << 20})
        capture = self.revive()
        old = lambda rows: sorted((r for r in rows if r["m"] == "x"), key=lambda r: r["seq"])  # noqa: E731
        got = wait_until(lambda: (lambda d: d if len(d) >= 6000 else None)(old(self.delivered(capture))), 30,
                         "the revived backend's backlog")
        self.assertEqual(got, old(self.filed()), "the same records, each once, field for field")

    def test_drop_oldest_never_pushes_back_and_counts_what_it_drops(self):
        port = free_port()
        self.put({"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}},
                 {"max_bytes": 4096, "when_full": "drop_oldest"})
        self.post_all(port, 200, 20)  # 4,000 records, far more than 4 KiB of queue
        wait_until(lambda: len(self.filed()) >= 4000, 20, "every record in the file")
        queue = wait_until(lambda: (lambda q: q if q["dropped_records"] > 0 else None)(self.queue()), 20,
                           "drops counted")
        self.assertLessEqual(queue["bytes"], 4096 + 2048, queue)  # one batch may be on its way out
        text = self.admin.http("GET", "/metrics")[1]
        found = re.search(r'^drover_exporter_dropped_records_total\{group="default",pipeline="fan",node="http",'
                          r'generation="1",reason="QueueFull"\} (\d+)$', text, re.M)
        self.assertTrue(found and int(found.group(1)) > 0, "the drops in /metrics")
        self.engine.wait_log(r"exporter queue full: oldest records dropped node=http")
        capture = self.revive()
        wait_until(lambda: len(self.delivered(capture)) + self.queue()["dropped_records"] == 4000, 20,
                   "each record either delivered or counted as dropped")
        got = [r["i"] for r in self.delivered(capture)]
        self.assertEqual(got[-1], 3999, "the newest kept")
        self.assertEqual(got, sorted(got), "what was kept, in order")


    def test_an_ack_true_request_is_answered_once_the_branch_behind_delivered_it(self):
        bulk, port = free_port(), free_port()
        spec = self.fan({"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}", "ack": True}})
        spec["nodes"]["bulk"] = {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{bulk}"},
                                 "to": ["file", "http"]}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/fan", body={"pipeline": spec},
                                          timeout=30)
        self.assertEqual(status, 200, body)
        self.post_all(bulk, 300, 10)  # 3,000 records: the dead branch is behind (with a disk buffer, in the log)
        answers = []
        sender = threading.Thread(target=lambda: answers.append(
            (curl_post(port, "/", ndjson([{"i": 3000}]), "application/x-ndjson"), time.monotonic())))
        sender.start()
        self.addCleanup(sender.join, 60)
        wait_until(lambda: len(self.filed()) >= 3001, 20, "the acknowledged record in the file beside the dead backend")
        #  The heartbeat after that shows the record waiting for the dead branch
        #  (a settle would have answered it by then), and only then is the backend revived.
        wait_until(lambda: self.queue()["records"] >= 3001 - 50, 20, "the record queued for the dead branch")
        revived_at = time.monotonic()
        capture = self.revive()
        wait_until(lambda: answers, 30, "the answer once the revived backend has the record")
        (status, body, _, _), answered_at = answers[0]
        self.assertEqual(status, 200, body)
        self.assertGreater(answered_at, revived_at, "answered before the branch behind delivered it")
        self.assertIn(3000, [r["i"] for r in self.delivered(capture)])

    def changed_while_behind(self, change, cores=1):
        """3,000 records in with the backend down, the pipeline changed by
        change(spec), then the backend revived: it gets every record once,
        and the file beside it has each once (the next generation takes the
        log over with where each exporter stood)."""
        port = free_port()
        spec = self.fan({"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}})
        spec["cores"] = {"count": cores}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/fan", body={"pipeline": spec},
                                          timeout=30)
        self.assertEqual(status, 200, body)
        self.post_all(port, 300, 10)
        wait_until(lambda: len(self.filed()) >= 3000, 20, "every record in the file beside the dead backend")
        change(spec)
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/fan", body={"pipeline": spec},
                                          timeout=60)
        self.assertEqual(status, 200, body)
        capture = self.revive()
        got = wait_until(lambda: (lambda d: d if len(d) >= 3000 else None)(self.delivered(capture)), 30,
                         "the revived backend's whole backlog after the change")
        self.assertEqual(sorted(r["i"] for r in got), list(range(3000)), "nothing lost, nothing twice")
        self.post_all(port, 10, 10)  # and the new generation goes on
        wait_until(lambda: len(self.filed()) >= 3100, 20, "the new generation's records in the file")
        self.assertEqual(sorted(r["i"] for r in self.filed()), sorted(list(range(3000)) + list(range(100))),
                         "the file beside it not written again")

    def test_a_replace_while_one_branch_is_behind_hands_its_position_over(self):
        def change(spec):
            spec["nodes"]["http"]["config"]["retry"] = {**RETRY, "initial_ms": 60}
        self.changed_while_behind(change)

    def test_a_resize_while_one_branch_is_behind_hands_its_position_over(self):
        def change(spec):
            spec["cores"] = {"count": 1}
        self.changed_while_behind(change, cores=2)

class DiskQueues(Queues):
    """The same with a disk buffer: the log holds the backlog, written once;
    the exporter behind reads it again from its own position."""

    policies = {"buffer": {"type": "disk", "max_bytes": 256 << 20, "sync": "none"}}

    def positions(self):
        path = os.path.join(self.engine.run_dir, "buffer", "default", "fan", "0.0", "positions")
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def test_a_kill_of_everything_mid_backlog_loses_nothing_and_rewrites_nothing(self):
        port = free_port()
        self.engine.stop()  # one whose config has the pipeline, so that it comes back after the kill
        self.out = tempfile.mkdtemp(prefix="drv-fan-")
        self.addCleanup(shutil.rmtree, self.out, True)
        spec = self.fan({"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}})
        self.start_engine(engine_yaml(json.dumps({"fan": spec}), "  heartbeat_interval_ms: 1000\n")
                          .replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready(20)
        self.post_all(port, 300, 10)  # 3,000 records, inputs 1..300 of the log
        wait_until(lambda: len(self.filed()) >= 3000, 20, "every record in the file beside the dead backend")
        #  Where each exporter stands is saved now and then: the file's at the last input.
        wait_until(lambda: self.positions().get("file", 0) >= 300, 20, "the file exporter's position saved")
        self.assertLess(self.positions().get("http", 0), 300, "the dead exporter's position behind")
        self.engine.signal(signal.SIGKILL)  # droverd is PID 1 of its namespace: every child goes with it
        self.engine.wait_exit(10)
        self.engine.log.close()
        capture = self.revive()
        self.engine.start()
        self.admin.wait_ready(20)
        got = wait_until(lambda: (lambda d: d if len(d) >= 3000 else None)(self.delivered(capture)), 20,
                         "the revived backend's whole backlog after the kill")
        self.assertEqual(sorted(r["i"] for r in got), list(range(3000)), "nothing lost, nothing twice")
        wait_until(lambda: self.positions().get("http", 0) >= 300, 10, "the revived exporter's position saved")
        self.assertEqual(sorted(r["i"] for r in self.filed()), list(range(3000)),
                         "the file beside it not written again")


if __name__ == "__main__":
    unittest.main()
