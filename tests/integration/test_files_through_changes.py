"""receiver:file exact through live changes (issue 48, docs/operations.md
"What each operation may repeat"): a file another instance still holds
is taken over once that instance lets it go, never decided on from a scan
that could not see it: renamed while its reader drains, the lines written
into it after the rename are read by the next generation, none twice; a
file rotated twice while the whole tree was down is read with its rotated
sibling, every record keeping its pod."""

import json
import os
import signal
import threading

from capture import Capture
from harness import Admin, engine_yaml, wait_until
from test_file_receiver import FileReceiverBase

UID = "0f5c1d2e-aaaa-bbbb-cccc-123456789abc"
POD = {"k8s.namespace.name": "shop", "k8s.pod.name": "cart-7d9f", "k8s.pod.uid": UID,
       "k8s.container.name": "server", "k8s.container.restart_count": 0}


def cri(lines):
    return [f"2026-11-28T10:00:00Z stdout F {line}" for line in lines]


class FilesThroughChanges(FileReceiverBase):
    def pod_dir(self):
        """The kubelet's layout: pods/NAMESPACE_POD_UID/CONTAINER/ (made before the engine starts)."""
        pods = os.path.join(self.logdir(), "pods")
        container = os.path.join(pods, f"shop_cart-7d9f_{UID}", "server")
        os.makedirs(container)
        return pods, container

    def test_a_file_renamed_while_its_reader_drains_is_read_on_by_the_next_generation(self):
        """The drain/lock race made deterministic: the backend holds the old
        generation's last batch, so it holds the file's lock past the new
        one's first scan; the file is renamed and written to then (a
        writer late after a rotation, as containerd is). The new generation
        waits for the lock instead of deciding from that scan: once the old
        one settles and lets the file go, the new one reads the rest from
        the old one's checkpoint. Before: its one pass over the checkpoints
        was spent, the late lines were never read."""
        pods, container = self.pod_dir()
        log = os.path.join(container, "0.log")
        capture = Capture()
        self.addCleanup(capture.close)
        written = []

        def write(path, count):
            lines = [f"line-{len(written) + k}" for k in range(count)]
            self.append(path, cri(lines))
            written.extend(lines)

        def spec(poll_ms):
            return {"pipeline": {"cores": {"count": 1}, "nodes": {
                "in": {"type": "receiver:file", "to": ["out"], "config": {
                    "include": [f"{pods}/*/*/*.log"], "format": "cri", "kubernetes": True,
                    "start_at": "beginning", "poll_interval_ms": poll_ms}},
                "out": {"type": "exporter:http", "config": {
                    "endpoint": capture.url(), "batch": {"max_records": 50, "max_delay_ms": 20},
                    "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}}}}}}

        def delivered():
            return [json.loads(line) for body in capture.bodies() for line in body.decode().splitlines() if line]
        self.start_engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 1000\n")
                          .replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready(20)
        path = "/api/v1/groups/default/pipelines/files"
        status, body, _ = self.admin.http("PUT", path, body=spec(100), timeout=60)
        self.assertEqual(status, 200, body)
        write(log, 100)
        wait_until(lambda: len(delivered()) >= 100, 15, "the first lines delivered")
        capture.gate.clear()  # the backend holds what comes next: the old generation cannot settle it
        write(log, 10)
        wait_until(lambda: len(capture.requests) > len(capture.accepted), 15, "the next lines read and posted")
        #  A replace, answered once the old generation drained: the backend holds that back.
        replace = threading.Thread(target=lambda: answers.append(self.admin.http("PUT", path, body=spec(101),
                                                                                 timeout=60)))
        answers = []
        replace.start()
        self.addCleanup(replace.join)
        self.engine.wait_log(r"worker\[default/files@\d+#0\]: waiting for files another instance holds count=1", 15)
        rotated = log + ".20261128-100000"
        os.rename(log, rotated)  # rotated while the old reader still holds it
        write(rotated, 15)       # and written to after the rename
        write(log, 10)           # a new 0.log
        capture.gate.set()
        replace.join(60)
        self.assertEqual(answers[0][0], 200, answers)
        got = wait_until(lambda: (lambda d: d if len(d) >= len(written) else None)(delivered()), 30, "every line")
        bodies = [r["body"] for r in got]
        self.assertEqual(sorted(bodies), sorted(written), "every line once, the late ones too")
        self.assertTrue(all(r["resource"] == POD for r in got), "every record keeps its pod")
        self.engine.wait_log(r"files another instance held are taken over", 5)
        self.assertNotIn("read again from its start", self.engine.log_text())

    def test_rotation_twice_while_the_tree_is_down_keeps_every_record_and_its_pod(self):
        """0.log is rotated to 0.log.<time> twice while droverd and every
        child are SIGKILLed and down: the first rotated file is found by its
        identity and read from its checkpoint, the second (never followed,
        no glob finds it) as its rotated sibling from its start, and every
        record of both keeps the pod of the path they were first written
        under. Before: the second was never read, the first lost its pod."""
        pods, container = self.pod_dir()
        log = os.path.join(container, "0.log")
        written = []

        def write(count):
            lines = [f"line-{len(written) + k}" for k in range(count)]
            self.append(log, cri(lines))
            written.extend(lines)

        write(50)
        engine = self.start({"include": [f"{pods}/*/*/*.log"], "format": "cri", "kubernetes": True,
                             "start_at": "beginning"})
        self.wait_bodies(written)
        wait_until(lambda: self.checkpoint(log) == os.path.getsize(log), 5, "0.log's checkpoint at its end")
        engine.signal(signal.SIGKILL)  # droverd and every child
        engine.wait_exit(10)
        write(10)                                     # into 0.log while nobody reads it
        os.rename(log, log + ".20261128-100000")      # rotated: no glob finds 0.log.<time>
        write(20)                                     # a new 0.log
        os.rename(log, log + ".20261128-100100")      # rotated again, never followed
        write(30)                                     # and the newest 0.log
        engine.log.close()
        engine.start()
        Admin(engine, self.http_port).wait_ready(20)
        self.wait_bodies(written, 30)
        rows = self.out()
        self.assertEqual(sorted(r["body"] for r in rows), sorted(written), "every line once")
        lost = [r for r in rows if r.get("resource") != POD]
        self.assertEqual(lost, [], "every record keeps its pod")
        engine.wait_log(r"file rotated while nobody read it path=.*0\.log\.20261128-100100", 5)


if __name__ == "__main__":
    import unittest
    unittest.main()
