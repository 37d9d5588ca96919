"""receiver:file exact through live changes (issue 48, docs/operations.md
"What each operation may repeat"): a file another instance still holds
is taken over once that instance lets it go, never decided on from a scan
that could not see it: renamed while its reader drains, the lines written
into it after the rename are read by the next generation, none twice; a
file rotated twice while the whole tree was down is read with its rotated
sibling, every record keeping its pod; and a chaos schedule: four pod
logs written and rotated as the kubelet does, through 12 replaces, 2
resizes, a canary and its promotion, a rollback and an upgrade of drover
itself, loses nothing and reads nothing twice."""

import datetime
import json
import os
import shutil
import signal
import tempfile
import threading

from capture import Capture
from harness import BIN, Admin, engine_yaml, wait_until
from test_file_receiver import FileReceiverBase
from test_upgrade import NEXT, install

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


    def test_a_chaos_schedule_of_live_changes_loses_nothing_and_reads_nothing_twice(self):
        """Four pods' 0.log, each written at about 200 lines a second and
        rotated as the kubelet does every 1,500 lines (renamed to
        0.log.<time>, a few lines still written into the renamed file, a new
        0.log), on 2 cores, through 12 replaces, 2 resizes, a canary and its
        promotion, a rollback and an upgrade of drover itself (every process
        but droverd replaced). The unsettled window of this pipeline is what
        exporter:file has not written yet when a generation lets a file go:
        nothing, since a file is let go only once what was read of it is
        settled. So every line arrives, and none twice, with its pod."""
        pods = os.path.join(self.logdir(), "pods")
        install_dir = tempfile.mkdtemp(prefix="drv-install-")
        self.addCleanup(shutil.rmtree, install_dir, True)
        install(BIN, install_dir)
        written, stop = [], threading.Event()

        def writer():
            logs = []
            for p in range(4):
                container = os.path.join(pods, f"shop_cart-{p}_{UID[:-1]}{p}", "app")
                os.makedirs(container)
                logs.append({"path": os.path.join(container, "0.log"), "lines": 0})
                logs[-1]["file"] = open(logs[-1]["path"], "a")
            n = 0
            while not stop.is_set():
                for p, log in enumerate(logs):
                    lines = [f"p{p}-{n + k}" for k in range(4)]
                    log["file"].write("".join(line + "\n" for line in cri(lines)))
                    log["file"].flush()
                    written.extend(lines)
                    log["lines"] += 4
                    if log["lines"] >= 1500:  # the kubelet's rotation: renamed, the writer late by a few lines
                        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S%f")
                        os.rename(log["path"], f"{log['path']}.{stamp}")
                        late = [f"p{p}-{n + k}-late" for k in range(3)]
                        log["file"].write("".join(line + "\n" for line in cri(late)))
                        log["file"].close()
                        written.extend(late)
                        log["file"], log["lines"] = open(log["path"], "a"), 0
                n += 4
                stop.wait(0.02)  # the writers' pace, not a synchronisation
            for log in logs:
                log["file"].close()

        def spec(poll, cores=2, canary=None):
            rollout = {"step_timeout_secs": 60, "drain_timeout_secs": 30}
            if canary:
                rollout["canary"] = canary
            return {"pipeline": {"cores": {"count": cores}, "policies": {"rollout": rollout}, "nodes": {
                "in": {"type": "receiver:file", "to": ["out"], "config": {
                    "include": [f"{pods}/*/*/*.log"], "format": "cri", "kubernetes": True,
                    "start_at": "beginning", "poll_interval_ms": poll}},
                "out": {"type": "exporter:file",
                        "config": {"path": f"{self.engine.out_dir}/out-{{core}}-{{generation}}.ndjson"}}}}}

        self.start_engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 1000\n")
                          .replace("HTTP", str(self.http_port)), droverd=os.path.join(install_dir, "droverd"))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready(20)
        path = "/api/v1/groups/default/pipelines/files"

        def lines_go_on():  # about 1.5 s of writing between two changes: rotations fall between and during them
            mark = len(written) + 1200
            wait_until(lambda: len(written) >= mark, 30, "the writers to go on")

        def put(body, action):
            lines_go_on()
            status, reply, _ = self.admin.http("PUT", path, body=body, timeout=120)
            self.assertEqual((status, reply.get("action")), (200, action), reply)

        status, reply, _ = self.admin.http("PUT", path, body=spec(100), timeout=120)
        self.assertEqual(status, 200, reply)
        thread = threading.Thread(target=writer)
        thread.start()
        self.addCleanup(lambda: (stop.set(), thread.join()))
        wait_until(lambda: len(self.out()) >= 1000, 20, "reading under way")
        for k in range(12):
            put(spec(101 + k, cores=2 - (4 <= k < 8)), "replace")
            if k in (3, 7):  # one core fewer after the fourth replace, back to two after the eighth
                put(spec(101 + k, cores=2 - (k == 3)), "resize")
        lines_go_on()
        status, body, _ = self.admin.http("PUT", path + "?wait=false", timeout=60,
                                          body=spec(200, canary={"cores": 1, "hold_secs": 600,
                                                                 "auto_promote": False}))
        self.assertEqual(status, 202, body)
        rid = body["rollout_id"]

        def rollout(states):
            return wait_until(lambda: (lambda r: r if r["state"] in states else None)(
                self.admin.http("GET", f"{path}/rollouts/{rid}")[1]), 60, f"the canary {states}")
        rollout(("paused",))
        lines_go_on()  # the canary reads beside generation one
        self.assertEqual(self.admin.http("POST", f"{path}/rollouts/{rid}/promote", body={})[0], 200)
        self.assertEqual(rollout(("succeeded", "failed"))["state"], "succeeded")
        lines_go_on()
        status, body, _ = self.admin.http("POST", path + "/rollback", body={}, timeout=120)
        self.assertEqual(status, 200, body)
        lines_go_on()
        install(NEXT, install_dir)
        status, body, _ = self.admin.http("POST", "/api/v1/engine/upgrade", body={})
        self.assertEqual(status, 202, body)
        done = self.admin.wait_upgraded()
        self.assertEqual(done["state"], "succeeded", done)
        lines_go_on()
        stop.set()
        thread.join()
        want = set(written)
        rows = wait_until(lambda: (lambda r: r if {x["body"] for x in r} >= want else None)(self.out()), 60,
                          f"all {len(want)} lines")
        bodies = [r["body"] for r in rows]
        self.assertEqual(set(bodies), want, "every line, and nothing else")
        twice = len(bodies) - len(want)
        print(f"files through changes: {len(want)} lines, {twice} twice, "
              f"{sum('.log.' in r['attributes']['log.file.path'] for r in rows)} read under a rotated name",
              flush=True)
        self.assertEqual(twice, 0, "nothing read twice: nothing is let go unsettled")
        self.assertTrue(all((r.get("resource") or {}).get("k8s.pod.name", "").startswith("cart-") for r in rows),
                        "every record its pod")
        self.assertNotIn("read again from its start", self.engine.log_text())


if __name__ == "__main__":
    import unittest
    unittest.main()
