"""receiver:file through the real binaries (issue 38): lines of files a
glob finds become records with log.file.path and log.file.name; start_at
end skips what a file held at the pipeline's first start; a log rotated by
rename twice (once while droverd and every child are SIGKILLed and down)
and by copytruncate once, lines written throughout, loses no line and
repeats few; the CRI layout with partial lines and kubernetes: true, the
docker json-file format, ndjson and multiline messages; lines cut at
max_line_bytes; a new file found by inotify before any poll; a file
followed while empty keeps its checkpoint across a kill; three
replaces, a resize and a rollback while files grow, and a resize while the
backend is down, lose nothing and repeat nothing; a 1 GiB file behind a
stalled backend keeps memory flat."""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

from capture import Capture
from harness import Admin, EngineTest, engine_yaml, free_port, read_ndjson, wait_until
from hostile import SANITIZED, rss_kb


class FileReceiverBase(EngineTest):
    """A receiver:file pipeline into exporter:file, and what to look at (test_hostile_files.py too)."""

    def setUp(self):
        self.http_port = free_port()
        self.logs = None  # set once the engine's directories exist

    def start(self, receiver_config, cores=1, extra_nodes="", heartbeat_ms=100):
        pipelines = f"""
      files:
        cores: {{count: {cores}}}
        nodes:
          in: {{type: "receiver:file", config: {json.dumps(receiver_config)}, to: [out]}}
          out: {{type: "exporter:file", config: {{path: "{{OUT}}/out-{{core}}.ndjson"}}}}
"""
        engine = self.start_engine(engine_yaml(pipelines, f"  heartbeat_interval_ms: {heartbeat_ms}\n")
                                   .replace("HTTP", str(self.http_port)))
        self.admin = Admin(engine, self.http_port)
        self.admin.wait_ready(20)
        return engine

    def logdir(self):
        """A directory for the files read, made before the engine starts."""
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"drover-files-{os.getpid()}-{id(self)}")
        os.makedirs(path, exist_ok=True)
        self.addCleanup(shutil.rmtree, path, True)
        return path

    def out(self):
        rows = []
        for path in glob.glob(os.path.join(self.engine.out_dir, "out-*.ndjson")):
            rows += read_ndjson(path, killed=True)  # a test here kills everything, maybe mid-write
        return rows

    def bodies(self):
        return [r.get("body") for r in self.out()]

    def wait_bodies(self, wanted, timeout=15):
        wanted = set(wanted)
        return wait_until(lambda: (lambda got: got if wanted <= set(got) else None)(self.bodies()), timeout,
                          f"{len(wanted)} lines out")

    def checkpoint(self, path):
        """Where path's checkpoint says its settled reading stands (None: no checkpoint)."""
        st = os.stat(path)
        name = f"{st.st_dev:x}-{st.st_ino:x}.json"
        for found in glob.glob(os.path.join(self.engine.run_dir, "buffer", "default", "files", "checkpoints", name)):
            with open(found) as f:
                return json.load(f)["offset"]
        return None

    @staticmethod
    def append(path, lines):
        with open(path, "a") as f:
            f.write("".join(line + "\n" for line in lines))


class FileReceiver(FileReceiverBase):
    def test_lines_become_records_and_start_at_end_skips_what_was_there(self):
        logs = self.logdir()
        app = os.path.join(logs, "app.log")
        self.append(app, ["old-1", "old-2"])
        self.start({"include": [f"{logs}/*.log"]})
        self.engine.wait_log(r"following file path=.*app.log from=\"its end")
        self.append(app, [f"new-{n}" for n in range(5)])
        self.append(os.path.join(logs, "other.log"), ["other-0"])  # found after the start: read from its beginning
        self.append(os.path.join(logs, "skip.txt"), ["not matched"])
        self.wait_bodies([f"new-{n}" for n in range(5)] + ["other-0"])
        rows = self.out()
        self.assertEqual(sorted(r["body"] for r in rows), sorted([f"new-{n}" for n in range(5)] + ["other-0"]))
        first = next(r for r in rows if r["body"] == "new-0")
        self.assertEqual(first["attributes"], {"log.file.path": app, "log.file.name": "app.log"})
        #  When drover read it (issue 49): within the test's own minutes.
        self.assertLess(abs(first["observed_time_unix_nano"] - time.time_ns()), 600 * 10**9)

    def test_rotation_by_rename_twice_and_copytruncate_loses_nothing(self):
        logs = self.logdir()
        app = os.path.join(logs, "app.log")
        written = []

        def write(count):
            lines = [f"line-{len(written) + k}" for k in range(count)]
            self.append(app, lines)
            written.extend(lines)

        write(50)
        engine = self.start({"include": [app], "start_at": "beginning"})
        write(50)
        self.wait_bodies(written)
        os.rename(app, app + ".1")  # rotated by rename: the old file read to its end
        write(50)                    # into a new app.log
        self.wait_bodies(written)
        #  Settled reading is saved within 200 ms: what is delivered by then
        #  is not read again after the kill; the 20 lines after may be.
        wait_until(lambda: self.checkpoint(app) == os.path.getsize(app), 5, "app.log's checkpoint at its end")
        #  And the rotated one's at its end too, or let go (read to its end).
        wait_until(lambda: self.checkpoint(app + ".1") in (None, os.path.getsize(app + ".1")), 5,
                   "app.log.1's checkpoint at its end")
        write(20)
        engine.signal(signal.SIGKILL)  # droverd and every child
        engine.wait_exit(10)
        write(30)                           # more into the file while nobody reads it
        os.rename(app, app + ".2")          # rotated again while down: no glob finds app.log.2
        write(40)                           # a new app.log
        engine.log.close()
        engine.start()
        Admin(engine, self.http_port).wait_ready(20)
        self.wait_bodies(written, 30)
        shutil.copyfile(app, app + ".3")    # copytruncate: copied, then cut to nothing
        with open(app, "r+") as f:
            f.truncate(0)
        write(25)
        self.wait_bodies(written, 30)
        bodies = self.bodies()
        self.assertEqual(set(bodies), set(written), "every line, and nothing else")
        twice = len(bodies) - len(set(bodies))
        self.assertLessEqual(twice, 20, "at most what was unsettled at the kill is read twice")

    def test_a_file_followed_while_empty_keeps_its_checkpoint_across_a_kill(self):
        #  Its fingerprint was taken of no bytes; the checkpoint saved once it
        #  grew must name it by its first bytes, or a restart takes it for
        #  another file and reads it again from its start. No scan comes
        #  between (poll_interval_ms: a minute): only the save can.
        logs = self.logdir()
        app = os.path.join(logs, "app.log")
        open(app, "w").close()
        engine = self.start({"include": [app], "start_at": "beginning", "poll_interval_ms": 60000})
        engine.wait_log(r"following file path=.*app.log from=\"its start\"")
        lines = [f"line-{n}" for n in range(50)]
        self.append(app, lines)
        self.wait_bodies(lines)
        wait_until(lambda: self.checkpoint(app) == os.path.getsize(app), 5, "app.log's checkpoint at its end")
        engine.signal(signal.SIGKILL)  # droverd and every child
        engine.wait_exit(10)
        engine.log.close()
        self.append(app, ["line-50"])
        engine.start()
        Admin(engine, self.http_port).wait_ready(20)
        self.wait_bodies(lines + ["line-50"])
        engine.wait_log(r"following file path=.*app.log from=\"its checkpoint\"", 5)
        self.assertEqual(sorted(self.bodies()), sorted(lines + ["line-50"]), "nothing read twice")

    def test_cri_partial_lines_joined_with_the_pod_from_the_kubelet_layout(self):
        pods = os.path.join(self.logdir(), "pods")
        uid = "0f5c1d2e-aaaa-bbbb-cccc-123456789abc"
        container = os.path.join(pods, f"shop_cart-7d9f_{uid}", "server")
        os.makedirs(container)
        log = os.path.join(container, "3.log")
        self.start({"include": [f"{pods}/*/*/*.log"], "format": "cri", "kubernetes": True,
                    "start_at": "beginning"})
        self.append(log, ["2026-11-26T10:00:00.123456789Z stdout F hello",
                          "2026-11-26T10:00:01Z stderr P part one, ",
                          "2026-11-26T10:00:01.5Z stderr P part two, ",
                          "2026-11-26T10:00:02+01:00 stderr F the end",
                          "not a cri line"])
        rows = {r["body"]: r for r in (lambda: wait_until(lambda: (lambda o: o if len(o) >= 3 else None)(self.out()),
                                                          15, "3 records"))()}
        self.assertEqual(set(rows), {"hello", "part one, part two, the end", "not a cri line"})
        hello = rows["hello"]
        self.assertEqual(hello["time_unix_nano"], 1795687200123456789)
        self.assertEqual(hello["attributes"], {"log.file.path": log, "log.file.name": "3.log", "log.iostream": "stdout"})
        self.assertEqual(hello["resource"], {"k8s.namespace.name": "shop", "k8s.pod.name": "cart-7d9f",
                                             "k8s.pod.uid": uid, "k8s.container.name": "server",
                                             "k8s.container.restart_count": 3})
        joined = rows["part one, part two, the end"]
        self.assertEqual(joined["time_unix_nano"], 1795687201000000000, "the time of its first part")
        self.assertEqual(joined["attributes"]["log.iostream"], "stderr")
        self.assertNotIn("time_unix_nano", rows["not a cri line"])

    def test_partial_lines_stay_joined_across_inputs_of_a_thousand_lines(self):
        log = os.path.join(self.logdir(), "0.log")
        self.start({"include": [log], "format": "cri", "start_at": "beginning"})
        lines = [f"2026-11-26T10:00:00Z stdout {'P' if n % 10 == 9 and n < 2999 else 'F'} piece-{n};" for n in range(3000)]
        self.append(log, lines)
        wanted = []
        for n in range(3000):
            if n % 10 == 0 and n > 0 and (n - 1) % 10 == 9:
                wanted[-1] += f"piece-{n};"  # the partial line before goes on in this one
            else:
                wanted.append(f"piece-{n};")
        got = wait_until(lambda: (lambda b: b if len(b) >= len(wanted) else None)(self.bodies()), 15,
                         f"{len(wanted)} records")
        self.assertEqual(sorted(got), sorted(wanted), "every partial line joined to the next, whichever input it was in")

    def test_inotify_finds_a_new_file_without_waiting_for_the_poll(self):
        logs = self.logdir()
        self.start({"include": [f"{logs}/*.log"], "poll_interval_ms": 60000})  # a poll that never comes in the test
        started = os.path.join(self.engine.run_dir, "buffer", "default", "files", "checkpoints", "started")
        wait_until(lambda: os.path.exists(started), 10, "the first scan done")
        self.append(os.path.join(logs, "new.log"), ["first", "second"])
        self.wait_bodies(["first", "second"], 10)

    def test_a_line_longer_than_max_line_bytes_is_cut_and_counted(self):
        log = os.path.join(self.logdir(), "long.log")
        self.start({"include": [log], "start_at": "beginning", "max_line_bytes": 100})
        #  One longer than a read (the rest dropped over several) and one in a read.
        self.append(log, ["short", "y" * 250 + "end", "after", "z" * 300000 + "tail", "next"])
        rows = wait_until(lambda: (lambda b: b if len(b) >= 5 else None)(self.bodies()), 15, "5 records")
        self.assertEqual(rows, ["short", "y" * 100, "after", "z" * 100, "next"],
                         "cut at 100 bytes, the rest up to its newline dropped")
        wait_until(lambda: ((self.admin.http("GET", "/api/v1/groups/default/pipelines/files/status")[1]
                             .get("instances") or [{}])[0].get("nodes") or {}).get("in", {}).get("errors") == 2,
                   10, "the two cut lines counted")
        self.engine.wait_log(r"a line longer than max_line_bytes was cut there")

    def test_the_docker_json_file_format_joins_partial_lines(self):
        docker = os.path.join(self.logdir(), "docker.json")
        self.start({"include": [docker], "format": "docker", "start_at": "beginning"})
        self.append(docker, [json.dumps({"log": "whole line\n", "stream": "stdout", "time": "2026-11-26T10:00:00Z"}),
                             json.dumps({"log": "split ", "stream": "stderr", "time": "2026-11-26T10:00:01Z"}),
                             json.dumps({"log": "in two\n", "stream": "stderr", "time": "2026-11-26T10:00:02Z"})])
        rows = wait_until(lambda: (lambda o: o if len(o) >= 2 else None)(self.out()), 15, "2 docker records")
        self.assertEqual(sorted((r["body"], r["attributes"]["log.iostream"]) for r in rows),
                         [("split in two", "stderr"), ("whole line", "stdout")])
        self.assertIn(1795687200000000000, [r.get("time_unix_nano") for r in rows])

    def test_ndjson_lines_are_records_and_other_lines_bodies(self):
        objects = os.path.join(self.logdir(), "objects.ndjson")
        self.start({"include": [objects], "format": "ndjson", "start_at": "beginning"})
        self.append(objects, [json.dumps({"level": "warn", "n": 1, "attributes": {"team": "a"}}), "[1, 2]"])
        rows = wait_until(lambda: (lambda o: o if len(o) >= 2 else None)(self.out()), 15, "2 ndjson records")
        parsed = next(r for r in rows if "level" in r)
        self.assertEqual(parsed["attributes"], {"team": "a", "log.file.path": objects,
                                                "log.file.name": "objects.ndjson"})
        self.assertEqual(parsed["n"], 1)
        self.assertIn("[1, 2]", [r.get("body") for r in rows], "not an object: kept as its body")

    def test_multiline_messages_begin_where_start_pattern_matches(self):
        java = os.path.join(self.logdir(), "java.log")
        self.start({"include": [java], "start_at": "beginning",
                    "multiline": {"start_pattern": "^\\d{4}-", "max_wait_ms": 200}})
        self.append(java, ["2026-11-26 first message", "2026-11-26 Exception in thread main",
                           "\tat a.b(C.java:1)", "\tat d.e(F.java:2)", "2026-11-26 last one, alone"])
        rows = wait_until(lambda: (lambda o: o if len(o) >= 3 else None)(self.out()), 15,
                          "3 messages, the last once max_wait_ms passed")
        self.assertEqual([r["body"] for r in rows],
                         ["2026-11-26 first message",
                          "2026-11-26 Exception in thread main\n\tat a.b(C.java:1)\n\tat d.e(F.java:2)",
                          "2026-11-26 last one, alone"])

    def test_three_replaces_a_resize_and_a_rollback_while_files_grow_lose_nothing(self):
        logs = self.logdir()
        written = []

        def write(count):
            for k in range(count):
                n = len(written)
                path = os.path.join(logs, f"app-{n % 16}.log")  # spread over the cores after the resize
                self.append(path, [f"line-{n}"])
                written.append(f"line-{n}")

        config = {"include": [f"{logs}/*.log"], "start_at": "beginning"}
        self.start(config)
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:file", "config": config, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out-{{core}}.ndjson"}}}}}
        write(100)
        for round_ in range(4):
            if round_ < 3:
                spec["pipeline"]["nodes"]["in"]["config"]["poll_interval_ms"] = 100 + round_  # a replace
            else:
                spec["pipeline"]["cores"] = {"count": 2}  # a resize
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/files", body=spec, timeout=60)
            self.assertEqual(status, 200, body)
            write(100)
        #  The added core follows its files: those the first let go of (the
        #  replaces' drains let go of files too: only the first's count), or,
        #  when the resize came before the first had taken them over, straight
        #  from their checkpoints.
        def caught_up():
            text = self.engine.log_text()
            let_go = len(re.findall(r"worker\[default/files@4#0\]: file let go to another instance", text))
            return len(re.findall(r"worker\[default/files@4#1\]: following file", text)) >= max(let_go, 1)
        wait_until(caught_up, 10, "the added core following the files it was given")
        boundary = len(written)
        write(100)
        self.wait_bodies(written, 30)
        bodies = self.bodies()
        self.assertEqual(set(bodies), set(written))
        self.assertEqual(len(bodies), len(set(bodies)), "a generation starts where the last one's settled reading stood")
        #  After the resize each file is read by one of the two instances
        #  (its identity hashed over them: 16 files all on one core would be
        #  one chance in 32,768), all of it.
        cores = {}
        for path in glob.glob(os.path.join(self.engine.out_dir, "out-*.ndjson")):
            for r in read_ndjson(path):
                if int(r["body"].split("-")[1]) >= boundary:
                    cores.setdefault(r["attributes"]["log.file.name"], set()).add(path)
        self.assertEqual(len(set().union(*cores.values())), 2, "both cores read files after the resize")
        self.assertTrue(all(len(where) == 1 for where in cores.values()), f"a file read by one instance: {cores}")
        #  And a rollback (the spec before, as a new generation on one core) goes on from the checkpoints.
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/files/rollback", timeout=60)
        self.assertEqual(status, 200, body)
        write(100)
        self.wait_bodies(written, 30)
        bodies = self.bodies()
        self.assertEqual(len(bodies), len(set(bodies)), "nothing read twice across the rollback")

    def test_a_resize_while_the_backend_is_slow_hands_files_over_at_their_checkpoints(self):
        """The instance that had a file moved to the added core lets it go only
        once what it read is settled, its checkpoint saved: however long the
        backend takes, the new reader starts there (nothing twice)."""
        logs = self.logdir()
        capture = Capture()
        self.addCleanup(capture.close)
        written = []

        def write(count):
            for k in range(count):
                n = len(written)
                self.append(os.path.join(logs, f"app-{n % 16}.log"), [f"line-{n}"])
                written.append(f"line-{n}")

        def spec(cores):
            return {"pipeline": {"cores": {"count": cores}, "nodes": {
                "in": {"type": "receiver:file", "config": {"include": [f"{logs}/*.log"], "start_at": "beginning"},
                       "to": ["out"]},
                "out": {"type": "exporter:http", "config": {
                    "endpoint": capture.url(), "batch": {"max_records": 50, "max_delay_ms": 20},
                    "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}}}}}}

        def delivered():
            return [json.loads(line)["body"] for body in capture.bodies() for line in body.decode().splitlines() if line]
        self.start_engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n").replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready(20)
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/files", body=spec(1), timeout=60)
        self.assertEqual(status, 200, body)
        write(100)
        wait_until(lambda: set(written) <= set(delivered()), 15, "the first lines delivered")
        capture.gate.clear()  # the backend stalls: what is read next is not settled
        write(100)
        wait_until(lambda: ((self.admin.http("GET", "/api/v1/groups/default/pipelines/files/status")[1]
                             .get("instances") or [{}])[0].get("nodes") or {}).get("in", {}).get("records_in", 0) >= 200,
                   10, "the next lines read, not settled")
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/files", body=spec(2), timeout=60)
        self.assertEqual(status, 200, body)
        self.engine.wait_log(r"worker\[default/files@1#1\]: ready", 10)
        time.sleep(1.5)  # the backend stays down past the time a file gone is let go: part of the scenario
        capture.gate.set()
        write(100)
        got = wait_until(lambda: (lambda d: d if set(written) <= set(d) else None)(delivered()), 30, "every line")
        self.assertEqual(len(got), len(set(got)), "nothing read twice across the hand-over")
        self.assertIn("file let go to another instance", self.engine.log_text())

    def test_a_file_grown_by_a_gigabyte_behind_a_stalled_backend_keeps_memory_flat(self):
        """Reading pauses while the pipeline pushes back: the instance's RSS
        stays within a bound whatever the file's size, and reading resumes
        once the backend answers again."""
        logs = self.logdir()
        app = os.path.join(logs, "big.log")
        capture = Capture()
        self.addCleanup(capture.close)
        capture.gate.clear()  # the backend stalls: answers wait
        pipelines = f"""
      files:
        cores: {{count: 1}}
        nodes:
          in: {{type: "receiver:file", config: {{include: ["{app}"], start_at: beginning}}, to: [out]}}
          out: {{type: "exporter:http", config: {{endpoint: "{capture.url()}", queue: {{max_bytes: 8388608}},
                 batch: {{max_records: 1000}}, retry: {{initial_ms: 50, max_ms: 200, max_elapsed_secs: 0}}}}}}
"""
        engine = self.start_engine(engine_yaml(pipelines, "  heartbeat_interval_ms: 100\n")
                                   .replace("HTTP", str(self.http_port)))
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        (pid,) = wait_until(lambda: list(engine.instances().values()), 10, "the instance")
        #  1 GiB of 100-byte lines, written by the shell as fast as it goes.
        line = "x" * 99
        subprocess.run(f"yes {line} | head -c {1 << 30} > {app}", shell=True, check=True)

        def node():
            st = admin.http("GET", "/api/v1/groups/default/pipelines/files/status")[1]
            return ((st.get("instances") or [{}])[0].get("nodes") or {}).get("in", {})
        wait_until(lambda: node().get("records_in", 0) > 0, 10, "reading started")
        peak = 0
        for _ in range(20):  # the pipeline pushes back: reading has paused
            peak = max(peak, rss_kb(pid))
            time.sleep(0.1)  # sampling memory over two seconds, not a synchronisation
        paused_at = node().get("records_in", 0)
        self.assertLess(paused_at, 2000000, "reading paused behind the stalled backend")
        if not SANITIZED:  # ASan keeps what is freed in quarantine: RSS says nothing
            self.assertLess(peak, 96 * 1024, f"RSS {peak} kB with a 1 GiB file: memory grows with the file")
        capture.gate.set()
        wait_until(lambda: node().get("records_in", 0) > paused_at + 100000, 30, "reading resumed")


if __name__ == "__main__":
    unittest.main()
