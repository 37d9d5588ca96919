"""Durable pipelines (docs/operations.md, disk buffers, issue 25) through the real binaries:
with policies.buffer type disk, what receiver:otlp answered 200 is in the
write-ahead log first, so that SIGKILLing droverd together with every child
(its PID namespace dies with it, as a container does) loses none of it: the
next droverd, started with the same config, reads the log back and the
backend gets every acknowledged record at least once."""

import glob
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import msgpack

from capture import Capture
from harness import Admin, EngineTest, curl_post, engine_yaml, free_port, wait_until
from hostile import SANITIZED, rss_kb

RECORDS_PER_REQUEST = 20


def otlp_logs(ids, pad=0):
    return json.dumps({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "durable"}}]},
        "scopeLogs": [{"scope": {"name": "t"}, "logRecords": [
            {"timeUnixNano": "1700000000000000000", "body": {"stringValue": i},
             "attributes": [{"key": "pad", "value": {"stringValue": "x" * pad}}] if pad else []}
            for i in ids]}]}]}).encode()


def segments(root, pattern="**/*"):
    """The log's segments under root (docs/operations.md, the log on disk):
    {first}.log, or .wal of the older format; spare-N.log are recycled ones
    waiting to be written over, holding nothing."""
    return [p for p in glob.glob(f"{root}/{pattern}", recursive=True)
            if p.endswith((".log", ".wal")) and not os.path.basename(p).startswith("spare-")]


def spares(root):
    return glob.glob(f"{root}/**/spare-*.log", recursive=True)


def dir_bytes(root):
    total = 0
    for path in segments(root):
        try:
            total += os.path.getsize(path)
        except FileNotFoundError:
            pass  # settled and recycled since the glob
    return total


def ids_in(body):
    """The log bodies of an OTLP/JSON logs request."""
    doc = json.loads(body)
    return [r["body"]["stringValue"]
            for rl in doc.get("resourceLogs", []) for sl in rl.get("scopeLogs", []) for r in sl.get("logRecords", [])]


class Sender(threading.Thread):
    """Posts OTLP/JSON logs requests one after another (a fresh id for every
    record) and keeps the ids of those answered 200; anything else (a 429,
    a connection cut by the kill) is not acknowledged and not counted."""

    def __init__(self, port, prefix, per_request=RECORDS_PER_REQUEST, pad=0):
        super().__init__(daemon=True)
        self.port, self.prefix, self.per_request, self.pad = port, prefix, per_request, pad
        self.acked, self.answers = [], {}
        self.retry_after, self.refusals = set(), []  # of the 429s
        self.stopping = threading.Event()
        self.n = 0

    def run(self):
        conn = None
        while not self.stopping.is_set():
            ids = [f"{self.prefix}-{self.n}-{k}" for k in range(self.per_request)]
            self.n += 1
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("POST", "/v1/logs", otlp_logs(ids, self.pad), {"Content-Type": "application/json"})
                response = conn.getresponse()
                body = response.read()
                self.answers[response.status] = self.answers.get(response.status, 0) + 1
                if response.status == 200:
                    self.acked += ids
                elif response.status == 429:
                    self.retry_after.add(response.getheader("Retry-After"))
                    self.refusals.append(body)
            except (OSError, http.client.HTTPException):
                conn = None
                self.answers["error"] = self.answers.get("error", 0) + 1
                time.sleep(0.01)  # droverd is down: retry shortly (not a synchronisation)

    def stop(self):
        self.stopping.set()
        self.join(15)


class DurabilityBase(EngineTest):
    """A durable pipeline against a capture backend, for the tests of this
    file and of test_log_on_disk.py."""

    def setUp(self):
        self.capture = Capture()
        self.addCleanup(self.capture.close)
        self.http_port, self.otlp_port = free_port(), free_port()

    def config(self, buffer="{type: disk, sync: batch, sync_interval_ms: 20}", cores=2, batch_records=512):
        pipelines = f"""
      durable:
        cores: {{count: {cores}}}
        nodes:
          in: {{type: "receiver:otlp", config: {{endpoint: "127.0.0.1:{self.otlp_port}"}}, to: [out]}}
          out: {{type: "exporter:otlp", config: {{endpoint: "{self.capture.url()}", encoding: json,
                 batch: {{max_delay_ms: 20, max_records: {batch_records}}}, retry: {{initial_ms: 50, max_ms: 200, max_elapsed_secs: 0}}}}}}
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

    def kill_rounds(self, buffer, rounds):
        """OTLP load, the backend stalling half the time, then SIGKILL of
        droverd and every child, rounds times; then every acknowledged record
        must reach the backend, and the last log be read back and settle."""
        engine = self.start_engine(self.config(buffer=buffer))
        acked = []
        for round_ in range(rounds):
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
        self.assertGreaterEqual(len(acked), 1200 * rounds)
        wait_until(lambda: not set(acked) - self.delivered(), 60,
                   f"every one of {len(acked)} acknowledged records at the backend")
        #  The last log was read back (the backend was stalled when it was
        #  killed) and empties once exported.
        final = wait_until(lambda: (lambda s: s if s and s["buffer"]["records"] == 0
                                    and s["buffer"]["replayed_records"] > 0 else None)(self.status(admin)),
                           30, "the log read back and settled")
        self.assertEqual(final["buffer"]["type"], "disk")


class Durability(DurabilityBase):
    def test_nothing_acknowledged_is_lost_when_droverd_and_every_child_are_killed_three_times(self):
        self.kill_rounds("{type: disk, sync: batch, sync_interval_ms: 20}", 3)

    def test_the_same_with_sync_always_and_with_sync_none(self):
        self.kill_rounds("{type: disk, sync: always}", 1)
        self.capture.close()
        self.capture = Capture()  # a fresh backend and engine for the second
        self.addCleanup(self.capture.close)
        self._dump_and_cleanup()
        self.http_port, self.otlp_port = free_port(), free_port()
        self.kill_rounds("{type: disk, sync: none}", 1)


    def test_a_dead_backend_grows_the_log_not_the_memory_and_everything_arrives_when_it_is_back(self):
        engine = self.start_engine(self.config(cores=1))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        buffer_dir = os.path.join(engine.run_dir, "buffer")
        self.capture.gate.clear()  # the backend takes requests and never answers
        sender = Sender(self.otlp_port, "dead", per_request=100, pad=200)
        sender.start()
        wait_until(lambda: dir_bytes(buffer_dir) > 4 << 20, 30, "4 MiB in the log")
        (worker,) = engine.instances().values()
        before = {"droverd": rss_kb(engine.pid), "instance": rss_kb(worker)}
        wait_until(lambda: dir_bytes(buffer_dir) > 44 << 20, 60, "40 MiB more in the log")
        after = {"droverd": rss_kb(engine.pid), "instance": rss_kb(worker)}
        sender.stop()
        for who in before if not SANITIZED else ():  # ASan keeps what is freed in quarantine: RSS says nothing
            self.assertLess(after[who] - before[who], 16 << 10, f"{who} RSS {before[who]} kB -> {after[who]} kB "
                            "while 40 MiB went to the log")
        wait_until(lambda: self.status(admin)["buffer"]["bytes"] > 40 << 20, 10, "status showing the bytes")
        self.assertGreater(self.status(admin)["buffer"]["records"], 0)
        self.assertNotIn(429, sender.answers)  # within max_bytes: taken at once, queued behind
        self.capture.gate.set()
        wait_until(lambda: not set(sender.acked) - self.delivered(), 120,
                   f"every one of {len(sender.acked)} acknowledged records at the backend")
        wait_until(lambda: self.status(admin)["buffer"]["records"] == 0, 30, "the buffer settled")
        #  Settled segments are recycled: the one appended to is kept, four spares wait (and one made ahead).
        wait_until(lambda: len(segments(buffer_dir)) <= 1 and len(spares(buffer_dir)) <= 5
                   and self.status(admin)["buffer"]["bytes"] < 1 << 20, 30, "the log's segments recycled")
        self.assertEqual(self.status(admin)["buffer"]["replayed_records"], 0)  # nobody was restarted

    def test_ack_true_still_answers_once_exported(self):
        pipelines = self.config(cores=1).replace('"127.0.0.1:%d"}' % self.otlp_port,
                                                  '"127.0.0.1:%d", ack: true}' % self.otlp_port)
        self.assertIn("ack: true", pipelines)
        engine = self.start_engine(pipelines)
        Admin(engine, self.http_port).wait_ready(20)
        self.capture.gate.clear()  # the backend holds its answer
        answered = []
        post = threading.Thread(target=lambda: answered.append(
            curl_post(self.otlp_port, "/v1/logs", otlp_logs(["held"]), "application/json")[0]), daemon=True)
        post.start()
        wait_until(lambda: self.capture.requests, 10, "the export under way")
        self.assertEqual(answered, [], "durable is not enough with ack: true")
        self.capture.gate.set()
        post.join(10)
        self.assertEqual(answered, [200])
        self.assertIn("held", self.delivered())

    def put(self, admin, cores, version, canary=None, drain_timeout_secs=10):
        rollout = {"step_timeout_secs": 20, "drain_timeout_secs": drain_timeout_secs}
        if canary:
            rollout["canary"] = canary
        spec = {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.otlp_port}"}, "to": ["v"]},
            "v": {"type": "processor:transform", "config": {"set": {"v": version}}, "to": ["out"]},
            "out": {"type": "exporter:otlp", "config": {
                "endpoint": self.capture.url(), "encoding": "json", "batch": {"max_delay_ms": 20},
                "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}}}},
            "policies": {"rollout": rollout, "buffer": {"type": "disk", "sync_interval_ms": 20}}}
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/durable", body={"pipeline": spec},
                                     timeout=90)
        self.assertEqual(status, 200, body)
        return body

    def test_a_replace_a_resize_and_a_canary_under_load_lose_nothing_and_replay_nothing(self):
        engine = self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        self.put(admin, cores=2, version=1)
        sender = Sender(self.otlp_port, "roll")
        sender.start()
        wait_until(lambda: len(sender.acked) >= 1000, 20, "load flowing")
        self.put(admin, cores=2, version=2)  # replace
        wait_until(lambda: len(sender.acked) >= 3000, 20, "load after the replace")
        self.put(admin, cores=1, version=2)  # resize: one core removed
        wait_until(lambda: len(sender.acked) >= 5000, 20, "load after the resize")
        self.put(admin, cores=1, version=3, canary={"cores": 1, "hold_secs": 1})
        wait_until(lambda: len(sender.acked) >= 7000, 20, "load after the canary")
        sender.stop()
        wait_until(lambda: not set(sender.acked) - self.delivered(), 60,
                   f"every one of {len(sender.acked)} acknowledged records at the backend")
        status = wait_until(lambda: (lambda s: s if s["buffer"]["records"] == 0 else None)(self.status(admin)), 30,
                            "the buffer settled")
        self.assertEqual(status["generation"], 3)  # a resize keeps the generation
        self.assertEqual(status["buffer"]["replayed_records"], 0, status["buffer"])
        bodies = [i for body in self.capture.bodies() for i in ids_in(body)]
        self.assertEqual(len(bodies), len(set(bodies)), "nothing exported twice")
        self.assertEqual(status["buffer"]["corrupt_segments"], 0)

    def test_a_resize_hands_what_the_removed_core_could_not_drain_to_a_kept_one(self):
        engine = self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        self.put(admin, cores=2, version=1, drain_timeout_secs=1)
        self.capture.gate.clear()  # the backend is down: both cores' logs hold what they took
        senders = [Sender(self.otlp_port, f"resize{k}") for k in range(4)]  # connections land on either core
        for sender in senders:
            sender.start()
        root = os.path.join(engine.run_dir, "buffer", "default", "durable")
        def both_filling():
            cores = len({os.path.dirname(p) for p in segments(root, "*/*")})
            if cores < 2 and len(senders) < 64 and sum(len(s.acked) for s in senders) >= 500:
                #  The kernel chose one core for every connection so far (1 in 8
                #  with four): another connection, until one lands on the other.
                senders.append(Sender(self.otlp_port, f"resize{len(senders)}"))
                senders[-1].start()
            return cores >= 2 and sum(len(s.acked) for s in senders) >= 2000
        wait_until(both_filling, 30, "both cores' logs filling")
        for sender in senders:
            sender.stop()
        acked = [i for s in senders for i in s.acked]
        events = admin.subscribe("buffer.")
        self.put(admin, cores=1, version=1, drain_timeout_secs=1)  # the removed core cannot drain: killed
        self.assertEqual(len(engine.instances()), 1)
        engine.wait_log(r"instance ended before its disk buffer settled .*records=[1-9]")
        self.assertTrue(events.poll(10000), "a buffer.kept event")
        topic, payload = events.recv_multipart()
        self.assertEqual(topic, b"buffer.kept")
        self.assertGreater(msgpack.unpackb(payload)["records"], 0)
        events.close()
        taken = engine.wait_log(r"disk buffer taken over dir=\S+ records=[1-9]", 30)
        self.capture.gate.set()
        wait_until(lambda: not set(acked) - self.delivered(), 60,
                   f"every one of {len(acked)} acknowledged records at the backend")
        status = wait_until(lambda: (lambda s: s if s["buffer"]["records"] == 0 else None)(self.status(admin)), 30,
                            "the buffer settled")
        self.assertGreater(status["buffer"]["replayed_records"], 0, (status["buffer"], taken))


    def test_a_full_disk_pushes_back_and_recovers_when_space_frees(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        mount = tempfile.mkdtemp(prefix="drv-tmpfs-")
        self.addCleanup(shutil.rmtree, mount, True)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", mount]).returncode != 0:
            self.skipTest("cannot mount a tmpfs here")
        self.addCleanup(subprocess.run, ["umount", "-l", mount])
        engine = self.start_engine(self.config(cores=1).replace("engine:\n", f"engine:\n  buffer_dir: {mount}\n", 1))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        self.capture.gate.clear()
        sender = Sender(self.otlp_port, "full", per_request=50, pad=100)
        sender.start()
        wait_until(lambda: sender.answers.get(429, 0) >= 5, 30, "429s from a full disk")
        degraded = wait_until(lambda: (lambda s: s if s["phase"] == "degraded" else None)(self.status(admin)), 10,
                              "the pipeline degraded")
        condition = next(c for c in degraded["conditions"] if c["type"] == "degraded")
        self.assertEqual((condition["status"], condition["reason"]), (True, "BufferFull"), condition)
        self.assertEqual(sender.retry_after, {"1"})
        self.assertIn(b"disk buffer is full", sender.refusals[0])
        self.assertEqual([i["restarts"] for i in degraded["instances"]], [0])  # no crash
        refused_then = sender.answers[429]
        acked_then = len(sender.acked)
        self.capture.gate.set()  # the backend is back: exported segments go, space frees
        wait_until(lambda: len(sender.acked) > acked_then + 1000, 30, "taking input again")
        sender.stop()
        self.assertGreater(refused_then, 0)
        wait_until(lambda: not set(sender.acked) - self.delivered(), 60,
                   f"every one of {len(sender.acked)} acknowledged records at the backend")
        wait_until(lambda: self.status(admin)["phase"] == "running", 10, "healthy again")

    def test_drop_oldest_keeps_taking_and_counts_what_it_dropped(self):
        #  Small batches: what the exporter holds in memory (16 of them) is
        #  much less than max_bytes, so that the log holds what was never read.
        engine = self.start_engine(self.config(buffer="{type: disk, max_bytes: 1048576, when_full: drop_oldest}",
                                               cores=1, batch_records=50))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        self.capture.gate.clear()
        sender = Sender(self.otlp_port, "drop", per_request=50, pad=100)
        sender.start()
        wait_until(lambda: (self.status(admin) or {}).get("buffer", {}).get("dropped_records", 0) > 1000, 30,
                   "records dropped")
        sender.stop()
        self.assertNotIn(429, sender.answers)
        status = self.status(admin)
        self.assertLessEqual(status["buffer"]["bytes"], 1048576)
        self.assertRegex(engine.log_text(), r"oldest records dropped .*dropped_total=[1-9]")
        metrics = admin.http("GET", "/metrics")[1]
        text = metrics.decode() if isinstance(metrics, bytes) else str(metrics)
        self.assertRegex(text, r'drover_buffer_dropped_records_total\{group="default",pipeline="durable"\} [1-9]')
        self.capture.gate.set()
        #  What was not dropped arrives: the newest, at least.
        wait_until(lambda: set(sender.acked[-100:]) <= self.delivered(), 60, "the newest records at the backend")


    def test_zmq_acknowledged_input_survives_a_kill_of_everything(self):
        import zmq
        ingest = free_port()
        pipelines = f"""
      durable:
        cores: {{count: 2}}
        nodes:
          in: {{type: "receiver:zmq", config: {{endpoint: "tcp://127.0.0.1:{ingest}", ack: true}}, to: [out]}}
          out: {{type: "exporter:otlp", config: {{endpoint: "{self.capture.url()}", encoding: json,
                 batch: {{max_delay_ms: 20}}, retry: {{initial_ms: 50, max_ms: 200, max_elapsed_secs: 0}}}}}}
        policies:
          buffer: {{type: disk}}
"""
        engine = self.start_engine(engine_yaml(pipelines).replace("HTTP", str(self.http_port)))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        producer = zmq.Context.instance().socket(zmq.DEALER)
        producer.setsockopt(zmq.LINGER, 0)
        producer.connect(f"tcp://127.0.0.1:{ingest}")
        #  The backend takes nothing: what the broker acknowledges (once it
        #  is in an instance's log) is not exported when the kill comes.
        self.capture.gate.clear()
        acked, sent = set(), 0
        deadline = time.monotonic() + 20
        while len(acked) < 200 and time.monotonic() < deadline:
            while sent - len(acked) < 50:
                producer.send_multipart([str(sent).encode(),
                                         msgpack.packb([{"body": f"z-{sent}-{k}"} for k in range(10)])])
                sent += 1
            if producer.poll(100):
                msg_id, answer = producer.recv_multipart()
                self.assertEqual(msgpack.unpackb(answer), {"ok": True})
                acked.add(int(msg_id))
        self.assertGreaterEqual(len(acked), 200, "acknowledged once in the log, with the backend stalled")
        engine.signal(signal.SIGKILL)
        engine.wait_exit(10)
        producer.close()
        engine.log.close()
        engine.start()
        self.capture.gate.set()
        want = {f"z-{m}-{k}" for m in acked for k in range(10)}
        wait_until(lambda: want <= self.delivered(), 30,
                   f"every one of {len(want)} acknowledged records at the backend")


if __name__ == "__main__":
    unittest.main()
