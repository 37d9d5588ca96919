"""Supervisor duties through the real binaries: restarts, crash loops,
PID-1 reaping, orderly SIGTERM under load, broker restarts, an instance
that aborts while it drains counted as the crash it is."""

import os
import signal
import subprocess
import threading
import time
import unittest

import msgpack
import zmq

from capture import Capture
from harness import (Admin, EngineTest, Producer, cmdline, children_of, engine_yaml, free_port, proc_status,
                     read_ndjson, wait_until, zombies_of)

GENERATOR = """
engine:
  run_dir: {RUN}
  admin: { http: "" }
  heartbeat_interval_ms: 200
  shutdown_timeout_secs: SHUTDOWN
groups:
  default:
    pipelines:
      gen:
        cores: { count: 1 }
        nodes:
          g:
            type: receiver:generator
            config: { rate: 200, record: { kind: tick } }
            to: [out]
          out:
            type: exporter:file
            config: { path: "{OUT}/gen-{core}.ndjson" }
        policies:
          restart: { max_restarts: 2, window_secs: 60, initial_backoff_ms: 20, max_backoff_ms: 200 }
"""

CRASH_LOOP = """
engine:
  run_dir: {RUN}
  admin: { http: "" }
groups:
  default:
    pipelines:
      broken:
        nodes:
          g:
            type: receiver:generator
            to: [out]
          out:
            type: exporter:file
            config: { path: "/proc/drover-cannot-write-here/out.ndjson" }
        policies:
          restart: { max_restarts: 3, window_secs: 60, initial_backoff_ms: 10, max_backoff_ms: 50 }
"""

ZMQ = """
engine:
  run_dir: {RUN}
  admin: { http: "" }
  heartbeat_interval_ms: 200
  shutdown_timeout_secs: 20
groups:
  default:
    pipelines:
      ingest:
        cores: { count: 2 }
        nodes:
          in:
            type: receiver:zmq
            config: { endpoint: "tcp://127.0.0.1:PORT" }
            to: [out]
          out:
            type: exporter:file
            config: { path: "{OUT}/ingest-{core}.ndjson" }
"""


def generator_config(shutdown=30):
    return GENERATOR.replace("SHUTDOWN", str(shutdown))


class Supervisor(EngineTest):
    def test_sigkilled_instance_is_replaced_on_its_core_and_carries_on(self):
        engine = self.start_engine(generator_config())
        engine.wait_log(r"instance ready instance=default/gen@1#0")
        old = engine.wait_instances(["default/gen@1#0"])["default/gen@1#0"]
        os.kill(old, signal.SIGKILL)
        engine.wait_log(r"instance crashed instance=default/gen@1#0 exit=137")
        engine.wait_log(r"instance ready instance=default/gen@1#0", count=2)
        new = wait_until(lambda: (lambda p: p if p and p != old else None)(
            engine.instances().get("default/gen@1#0")), 5, "replacement pid")
        self.assertNotEqual(new, old)
        self.assertEqual(proc_status(new, "Cpus_allowed_list"), "0")
        path = os.path.join(engine.out_dir, "gen-0.ndjson")
        before = len(read_ndjson(path))
        wait_until(lambda: len(read_ndjson(path)) > before + 20, 10, "output continues after restart")

    def test_an_instance_that_aborts_while_draining_is_a_crash(self):
        """A replace drains the old instance while the backend holds its last
        post; it aborts then (SIGABRT, as a library's failed assertion does).
        droverd sent it no signal: the exit is a crash, logged at WARN, the
        event not expected, the pipeline's crashes and the metric counting
        it, though nothing restarts an instance that was being retired."""
        capture = Capture()
        self.addCleanup(capture.close)
        http_port = free_port()
        engine = self.start_engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 1000\n")
                                   .replace("HTTP", str(http_port)))
        admin = Admin(engine, http_port)
        admin.wait_ready(20)
        path = "/api/v1/groups/default/pipelines/gen"

        def spec(rate):
            return {"pipeline": {"cores": {"count": 1}, "nodes": {
                "g": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["out"]},
                "out": {"type": "exporter:http", "config": {"endpoint": capture.url(),
                                                            "batch": {"max_records": 10, "max_delay_ms": 20}}}}}}
        self.assertEqual(admin.http("PUT", path, body=spec(100), timeout=60)[0], 200)
        wait_until(lambda: capture.accepted, 10, "a first batch delivered")
        capture.gate.clear()  # the next posts wait: the old instance cannot finish its drain
        wait_until(lambda: len(capture.requests) > len(capture.accepted), 10, "a post held")
        events = admin.subscribe("instance.exited")
        answers = []
        replace = threading.Thread(target=lambda: answers.append(admin.http("PUT", path, body=spec(101), timeout=60)))
        replace.start()
        self.addCleanup(replace.join)
        engine.wait_log(r"instance draining instance=default/gen@1#0", 15)
        os.kill(engine.instances()["default/gen@1#0"], signal.SIGABRT)
        engine.wait_log(r"WARN droverd: instance crashed instance=default/gen@1#0 exit=134 state=draining "
                        r"detail=\"killed by signal 6 while draining\"", 10)
        exited = wait_until(lambda: next((e for e in iter(lambda: msgpack.unpackb(events.recv_multipart()[1])
                                                          if events.poll(100) else None, None)
                                          if e.get("instance") == "default/gen@1#0"), None), 10, "its exit event")
        events.close()
        self.assertEqual((exited["signal"], exited["expected"]), (6, False))
        capture.gate.set()
        replace.join(60)
        self.assertEqual(answers[0][0], 200, answers)
        status = admin.http("GET", path + "/status")[1]
        self.assertEqual(status["crashes"], 1, status)
        metrics = admin.http("GET", "/metrics")[1]
        self.assertIn('drover_pipeline_crashes_total{group="default",pipeline="gen"} 1', metrics)

    def test_crash_loop_marks_pipeline_degraded(self):
        engine = self.start_engine(CRASH_LOOP)
        engine.wait_log(r"instance cannot start instance=default/broken@1#0 reason=\"node out: cannot open")
        engine.wait_log(r"pipeline degraded pipeline=default:broken", timeout=15)
        log = engine.log_text()
        self.assertNotIn("instance ready instance=default/broken", log)
        self.assertGreaterEqual(log.count("instance crashed instance=default/broken@1#0 exit=78"), 4)

    def test_orphaned_grandchild_is_reaped_by_pid1(self):
        engine = self.start_engine(generator_config())
        engine.wait_log(r"instance ready instance=default/gen@1#0")
        # A process inside droverd's namespace leaves an orphan behind; the orphan
        # is reparented to droverd (PID 1 there), which must reap it when it exits.
        subprocess.run(["nsenter", "-t", str(engine.pid), "-p", "-m", "--", "sh", "-c",
                        "sleep 0.3 >/dev/null 2>&1 & exit 0"], check=True)
        orphan = wait_until(lambda: next((c for c in children_of(engine.pid) if cmdline(c) == "sleep"), None),
                            5, "orphan reparented to droverd")
        wait_until(lambda: not os.path.exists(f"/proc/{orphan}"), 10, "orphan reaped (no zombie left)")
        self.assertEqual(zombies_of(engine.pid), [])

    def test_sigterm_under_load_exports_every_accepted_record_and_exits_0(self):
        port = free_port()
        engine = self.start_engine(ZMQ.replace("PORT", str(port)))
        engine.wait_log(r"instance ready instance=default/ingest@1#1")
        engine.wait_log(r"routing to instance=default/ingest@1#1")
        stop = threading.Event()
        sent_batches = [0]

        def produce():
            ctx = zmq.Context()
            sock = ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDTIMEO, 100)
            sock.connect(f"tcp://127.0.0.1:{port}")
            seq = 0
            while not stop.is_set():
                try:
                    sock.send(msgpack.packb([{"seq": seq + i, "pad": "x" * 40} for i in range(50)]))
                    seq += 50
                    sent_batches[0] += 1
                except zmq.Again:
                    pass
            sock.close()
            ctx.term()

        thread = threading.Thread(target=produce)
        thread.start()
        try:
            paths = [os.path.join(engine.out_dir, f"ingest-{c}.ndjson") for c in (0, 1)]
            # Sizes, not parsed rows: parsing files that grow faster than
            # Python reads them kept the load running for tens of seconds.
            wait_until(lambda: sum(os.path.getsize(p) for p in paths if os.path.exists(p)) > 1_000_000, 20,
                       "load flowing (about 20,000 records)")
            started = time.monotonic()
            engine.signal(signal.SIGTERM)
            code = engine.wait_exit(timeout=25)
            elapsed = time.monotonic() - started
        finally:
            stop.set()
            thread.join()
        self.assertEqual(code, 0)
        self.assertLess(elapsed, 20, "exited before shutdown_timeout_secs")
        accepted = sum(int(n) for n in __import__("re").findall(r"front door closed .* accepted_batches=(\d+)",
                                                              engine.log_text()))
        rows = [r["seq"] for p in paths for r in read_ndjson(p)]
        self.assertGreater(accepted, 0)
        self.assertEqual(len(rows), len(set(rows)), "no duplicates")
        self.assertEqual(len(rows), accepted * 50, "every accepted record exported")
        self.assertIn("shutdown complete", engine.log_text())

    def test_second_sigterm_kills_at_once(self):
        engine = self.start_engine(generator_config(shutdown=60).replace("heartbeat_interval_ms: 200",
                                                                          "heartbeat_interval_ms: 200"))
        engine.wait_log(r"instance ready instance=default/gen@1#0")
        pid = engine.instances()["default/gen@1#0"]
        os.kill(pid, signal.SIGSTOP)  # a stuck instance that will never drain
        engine.signal(signal.SIGTERM)
        engine.wait_log(r"shutdown started")
        engine.signal(signal.SIGTERM)
        self.assertEqual(engine.wait_exit(timeout=10), 0)
        self.assertIn("second", engine.log_text())

    def test_broker_restart_keeps_instances(self):
        port = free_port()
        engine = self.start_engine(ZMQ.replace("PORT", str(port)).replace("count: 2", "count: 1"))
        engine.wait_log(r"routing to instance=default/ingest@1#0")
        worker = engine.instances()["default/ingest@1#0"]
        broker = next(c for c in children_of(engine.pid) if cmdline(c) == "drover-broker")
        os.kill(broker, signal.SIGKILL)
        engine.wait_log(r"broker exited, restarting exit=137")
        engine.wait_log(r"broker connected", count=2)
        engine.wait_log(r"routing to instance=default/ingest@1#0", count=2)
        self.assertEqual(engine.instances()["default/ingest@1#0"], worker, "instance kept its pid")
        producer = Producer(f"tcp://127.0.0.1:{port}")
        producer.send([{"seq": i} for i in range(100)])
        producer.close()
        path = os.path.join(engine.out_dir, "ingest-0.ndjson")
        wait_until(lambda: len(read_ndjson(path)) == 100, 10, "records through the new broker")

    def test_unhealthy_instance_is_killed_and_restarted(self):
        engine = self.start_engine(generator_config())
        engine.wait_log(r"instance ready instance=default/gen@1#0")
        pid = engine.instances()["default/gen@1#0"]
        os.kill(pid, signal.SIGSTOP)  # alive but silent: no heartbeats
        engine.wait_log(r"instance unhealthy: 3 heartbeats missed instance=default/gen@1#0", timeout=5)
        engine.wait_log(r"instance ready instance=default/gen@1#0", count=2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
