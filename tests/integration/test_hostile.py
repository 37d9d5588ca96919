"""The hostile-input suite (issue 10, docs/security.md): what a local attacker,
a careless script or a producer sending junk can do to droverd through its
files, its run_dir and its data plane. Each test names the finding it
covers; each failed before its fix. The admin side is in
test_hostile_admin.py."""

import json
import os
import pwd
import re
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import msgpack
import zmq

from harness import (DROVERD, Admin, EngineTest, Producer, engine_yaml, free_port, read_ndjson, unobserved, wait_until)
from hostile import SANITIZED, gen_spec, rss_kb


class Files(EngineTest):
    """data_dirs, symlinks, ipc:// paths, run_dir, the state file."""

    def start(self, extra=""):
        self.http_port = free_port()
        self.data = tempfile.mkdtemp(prefix="drv-data-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.data])
        engine = self.start_engine(engine_yaml(engine_extra=f"  data_dirs: [{self.data}]\n" + extra)
                                   .replace("HTTP", str(self.http_port)))
        self.admin = Admin(engine, self.http_port)
        self.admin.wait_ready()
        return engine

    def put(self, name, spec, **kw):
        return self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec, **kw)

    def test_exporter_file_is_confined_to_data_dirs(self):
        self.start()
        for path in ("/etc/cron.d/drover", f"{self.data}/../escape.ndjson", "relative.ndjson",
                     f"{self.data}-sibling/x.ndjson"):
            status, body, _ = self.put("f", gen_spec(path))
            self.assertEqual(status, 422, (path, body))
            self.assertEqual(body["error"]["details"][0]["path"], "nodes.out.config.path")
            self.assertIn("outside engine.data_dirs", body["error"]["details"][0]["message"])
        self.assertFalse(os.path.exists("/etc/cron.d/drover"))
        status, body, _ = self.put("f", gen_spec(f"{self.data}/ok-{{core}}.ndjson"))
        self.assertEqual(status, 200, body)
        wait_until(lambda: read_ndjson(f"{self.data}/ok-0.ndjson"), 5, "records in the allowed file")

    def test_a_planted_symlink_is_never_followed(self):
        self.start()
        victim = os.path.join(self.data, "victim")
        with open(victim, "w") as f:
            f.write("secret\n")
        os.chmod(victim, 0o600)
        os.symlink(victim, os.path.join(self.data, "out.ndjson"))
        status, body, _ = self.put("s", gen_spec(os.path.join(self.data, "out.ndjson")) |
                                   {"step_timeout_secs": 2})
        self.assertEqual(status, 409, body)  # the create failed: the instance never became ready
        self.assertIn("symbolic link", json.dumps(body))
        with open(victim) as f:
            self.assertEqual(f.read(), "secret\n", "the file behind the link is untouched")

    def test_an_ipc_path_that_is_not_a_socket_is_left_alone(self):
        self.start()
        precious = os.path.join(self.data, "precious.db")
        with open(precious, "w") as f:
            f.write("data\n")
        spec = {"pipeline": {"nodes": {
            "in": {"type": "receiver:zmq", "config": {"endpoint": f"ipc://{precious}"}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        status, body, _ = self.put("i", spec)
        self.assertEqual(status, 422, body)
        self.assertIn("exists and is not a socket", body["error"]["details"][0]["message"])
        spec["pipeline"]["nodes"]["in"]["config"]["endpoint"] = "ipc:///tmp/drv-anywhere.sock"
        status, body, _ = self.put("i", spec)
        self.assertEqual(status, 422, body)
        self.assertIn("outside engine.data_dirs", body["error"]["details"][0]["message"])
        with open(precious) as f:
            self.assertEqual(f.read(), "data\n")

    def test_names_in_the_state_file_are_validated(self):
        state = tempfile.mktemp(prefix="drv-state-")
        self.addCleanup(lambda: os.path.exists(state) and os.unlink(state))
        spec = gen_spec()["pipeline"]
        with open(state, "w") as f:
            json.dump({"version": 1, "groups": {
                "../../x": {"pipelines": {"p": {"spec": spec, "running": True, "generation": 1}}},
                "default": {"pipelines": {"a" * 100: {"spec": spec, "running": True, "generation": 1},
                                          "ok": {"spec": spec, "running": True, "generation": 1}}}}}, f)
        self.start(extra=f"  state_file: {state}\n")
        self.engine.wait_log(r"state file: group skipped .*must match")
        self.engine.wait_log(r"state file: pipeline skipped .*must match")
        self.admin.wait_ready()
        names = [p["name"] for p in self.admin.http("GET", "/api/v1/groups/default/pipelines")[1]]
        self.assertEqual(names, ["ok"])
        self.assertNotIn("../../x", [g["name"] for g in self.admin.http("GET", "/api/v1/groups")[1]])

    def test_a_failed_state_save_is_retried_and_reported(self):
        state_dir = tempfile.mkdtemp(prefix="drv-statedir-")
        os.rmdir(state_dir)  # gone: every save fails until it is back
        state = os.path.join(state_dir, "state.json")
        self.addCleanup(subprocess.run, ["rm", "-rf", state_dir])
        self.start(extra=f"  state_file: {state}\n")
        events = self.admin.subscribe("state.")
        self.assertEqual(self.put("p", gen_spec())[0], 200)
        topic, payload = events.recv_multipart()
        while topic != b"state.save_failed":
            topic, payload = events.recv_multipart()
        self.assertIn("No such file or directory", msgpack.unpackb(payload)["reason"])

        def failures():
            text = self.admin.http("GET", "/metrics")[1]
            return int(re.search(r"^drover_state_save_failures_total (\d+)", text, re.M).group(1))
        self.assertGreater(failures(), 0)
        reasons = self.admin.http("GET", "/readyz")[1]["reasons"]
        self.assertTrue(any("state file not saved" in r for r in reasons), reasons)
        # Space (here: the directory) comes back: the next retry saves it.
        os.makedirs(state_dir)
        wait_until(lambda: os.path.exists(state), 10, "the state saved by a retry")
        with open(state) as f:
            self.assertIn("p", json.load(f)["groups"]["default"]["pipelines"])
        wait_until(lambda: not any("state file" in r for r in self.admin.http("GET", "/readyz")[1]["reasons"]),
                   5, "the /readyz reason cleared")


class RunDir(unittest.TestCase):
    def run_with_run_dir(self, prepare, *extra):
        with tempfile.TemporaryDirectory(prefix="drv-rd-") as d:
            run_dir = os.path.join(d, "run")
            os.mkdir(run_dir)
            prepare(run_dir)
            path = os.path.join(d, "drover.yaml")
            with open(path, "w") as f:
                f.write(f"engine:\n  run_dir: {run_dir}\n  admin: {{ http: \"\" }}\n")
            proc = subprocess.run([DROVERD, *extra, "-c", path], capture_output=True, text=True, timeout=10)
            return proc.returncode, proc.stderr

    def test_a_world_writable_or_foreign_run_dir_is_refused_with_111(self):
        code, err = self.run_with_run_dir(lambda p: os.chmod(p, 0o777))
        self.assertEqual(code, 111, err)
        self.assertIn("writable by others (mode 777)", err)
        code, err = self.run_with_run_dir(lambda p: os.chmod(p, 0o777), "--check")  # --check says so too, exit 100
        self.assertEqual(code, 100, err)
        self.assertIn("writable by others (mode 777)", err)
        nobody = pwd.getpwnam("nobody").pw_uid
        code, err = self.run_with_run_dir(lambda p: os.chown(p, nobody, -1))
        self.assertEqual(code, 111, err)
        self.assertIn(f"is owned by uid {nobody}", err)

    def test_curve_clients_dir_star_is_refused(self):
        with tempfile.TemporaryDirectory(prefix="drv-rd-") as d:
            path = os.path.join(d, "drover.yaml")
            with open(path, "w") as f:
                f.write("engine:\n  admin:\n    zmq: tcp://127.0.0.1:7999\n    curve: { server_secret_file: /x, "
                        "clients_dir: \"*\" }\n")
            proc = subprocess.run([DROVERD, "-c", path], capture_output=True, text=True, timeout=10)
            self.assertEqual(proc.returncode, 100, proc.stderr)
            self.assertIn("engine.admin.curve.clients_dir: \"*\" lets any client key in", proc.stderr)

    def test_a_nul_in_the_config_file_is_refused(self):
        with tempfile.TemporaryDirectory(prefix="drv-rd-") as d:
            path = os.path.join(d, "drover.yaml")
            with open(path, "w") as f:
                f.write("groups:\n  default:\n    pipelines:\n      p:\n        nodes:\n"
                        "          g: { type: receiver:generator, to: [o] }\n"
                        "          o: { type: exporter:file, config: { path: \"/tmp/ok\\0/../../etc/x\" } }\n")
            proc = subprocess.run([DROVERD, "-c", path], capture_output=True, text=True, timeout=10)
            self.assertEqual(proc.returncode, 100, proc.stderr)
            self.assertIn("a string holds a NUL character", proc.stderr)

    def test_the_http_port_is_parsed_strictly(self):
        with tempfile.TemporaryDirectory(prefix="drv-rd-") as d:
            path = os.path.join(d, "drover.yaml")
            for listen in ("127.0.0.1:8080abc", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:", "nohost:80"):
                with open(path, "w") as f:
                    f.write(f"engine:\n  admin:\n    http: \"{listen}\"\n")
                proc = subprocess.run([DROVERD, "-c", path], capture_output=True, text=True, timeout=10)
                self.assertEqual(proc.returncode, 100, (listen, proc.stderr))
                self.assertIn("engine.admin.http", proc.stderr)


class DataPlane(EngineTest):
    """Producers sending junk: duplicate keys, bad UTF-8, floods; many front doors."""

    def start(self, extra=""):
        self.http_port = free_port()
        engine = self.start_engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n" + extra)
                                   .replace("HTTP", str(self.http_port)))
        self.admin = Admin(engine, self.http_port)
        self.admin.wait_ready()
        return engine

    def zmq_pipeline(self, name, port, out, ack=False, processors=True):
        nodes = {"in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}", "ack": ack},
                        "to": ["drop" if processors else "out"]},
                 "out": {"type": "exporter:file", "config": {"path": out}}}
        if processors:
            nodes["drop"] = {"type": "processor:transform", "config": {"delete": ["secret"]}, "to": ["keep"]}
            nodes["keep"] = {"type": "processor:filter", "config": {"field": "level", "op": "ge", "value": 3},
                             "to": ["out"]}
        status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}",
                                          body={"pipeline": {"nodes": nodes}})
        self.assertEqual(status, 200, body)

    def test_records_with_duplicate_keys_never_reach_a_processor(self):
        self.start()
        port = free_port()
        out = os.path.join(self.engine.out_dir, "dup.ndjson")
        self.zmq_pipeline("dup", port, out)
        producer = Producer(f"tcp://127.0.0.1:{port}")
        # {"level": 1, "secret": "s1", "level": 5, "secret": "s2"}: a filter
        # judging the first level and a reader seeing the second; a delete
        # removing one secret and leaving the other.
        dup = (b"\x84" + msgpack.packb("level") + msgpack.packb(1) + msgpack.packb("secret") + msgpack.packb("s1")
               + msgpack.packb("level") + msgpack.packb(5) + msgpack.packb("secret") + msgpack.packb("s2"))
        producer.send_raw(dup)
        producer.send_raw(b"\x92" + dup + msgpack.packb({"level": 4, "n": 1}))  # refused whole, with its good record
        producer.send({"level": 5, "n": 2})
        wait_until(lambda: read_ndjson(out), 5, "the good record")
        self.assertEqual(unobserved(read_ndjson(out)), [{"level": 5, "n": 2}])
        self.engine.wait_log(r"rejected producer message .*duplicate key .level.")

        def errors():
            (inst,) = self.admin.http("GET", "/api/v1/groups/default/pipelines/dup/status")[1]["instances"]
            return inst["errors"]
        wait_until(lambda: errors() >= 1, 5, "refusals counted in errors")
        producer.close()

    def test_acked_producers_are_told_why_a_duplicate_key_record_is_refused(self):
        self.start()
        port = free_port()
        out = os.path.join(self.engine.out_dir, "dupack.ndjson")
        self.zmq_pipeline("dupack", port, out, ack=True)
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://127.0.0.1:{port}")
        dup = b"\x82" + msgpack.packb("a") + msgpack.packb(1) + msgpack.packb("a") + msgpack.packb(2)
        sock.send_multipart([b"m1", dup])
        self.assertTrue(sock.poll(5000), "an answer")
        frames = sock.recv_multipart()
        self.assertEqual(frames[0], b"m1")
        self.assertIn("duplicate key", json.dumps(msgpack.unpackb(frames[-1])))
        sock.close()

    def test_ndjson_output_is_strictly_valid_utf8(self):
        self.start()
        port = free_port()
        out = os.path.join(self.engine.out_dir, "utf8.ndjson")
        self.zmq_pipeline("utf8", port, out, processors=False)
        producer = Producer(f"tcp://127.0.0.1:{port}")
        hostile = {"surrogate": b"\xed\xa0\x80", "overlong": b"\xc0\xaf", "overlong3": b"\xe0\x80\xaf",
                   "beyond": b"\xf4\x90\x80\x80", "ok": "é".encode()}
        record = b"\x85" + b"".join(msgpack.packb(k) + bytes([0xa0 | len(v)]) + v for k, v in hostile.items())
        producer.send_raw(record)
        wait_until(lambda: os.path.exists(out) and os.path.getsize(out) > 0, 5, "the line")
        with open(out, "rb") as f:
            line = f.read()
        text = line.decode("utf-8")  # strict: raises on any invalid sequence
        doc = json.loads(text)
        self.assertEqual(doc["ok"], "é")
        for key in ("surrogate", "overlong", "overlong3", "beyond"):
            self.assertTrue(doc[key] and set(doc[key]) == {"\ufffd"}, (key, doc[key]))
        producer.close()

    def test_junk_is_logged_at_most_once_a_second(self):
        self.start()
        port = free_port()
        self.zmq_pipeline("junk", port, os.path.join(self.engine.out_dir, "junk.ndjson"), processors=False)
        producer = Producer(f"tcp://127.0.0.1:{port}")
        started = time.monotonic()
        for _ in range(300):
            producer.send_raw(b"\xc1 junk")
        self.engine.wait_log(r"rejected producer message")

        def refused():
            (inst,) = self.admin.http("GET", "/api/v1/groups/default/pipelines/junk/status")[1]["instances"]
            return inst["errors"]
        wait_until(lambda: refused() >= 300, 10, "all 300 refused")
        seconds = time.monotonic() - started
        lines = len(re.findall(r"rejected producer message", self.engine.log_text()))
        self.assertLessEqual(lines, int(seconds) + 2, f"{lines} lines in {seconds:.1f} s")
        producer.close()

    def test_front_doors_past_the_254th_are_served(self):
        self.start(extra="  limits: { max_pipelines: 10 }\n")
        ipc = os.path.join(self.engine.run_dir, "fd")
        out = os.path.join(self.engine.out_dir, "many.ndjson")
        for p in range(5):
            nodes = {f"in{i}": {"type": "receiver:zmq", "config": {"endpoint": f"ipc://{ipc}-{p}-{i}"},
                                "to": ["out"]} for i in range(60)}
            nodes["out"] = {"type": "exporter:file", "config": {"path": out}}
            status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/many{p}",
                                              body={"pipeline": {"nodes": nodes}})
            self.assertEqual(status, 200, body)
        # The 300th front door, and one in the middle.
        for endpoint in (f"ipc://{ipc}-4-59", f"ipc://{ipc}-2-10"):
            producer = Producer(endpoint)
            producer.send({"to": endpoint})
            producer.close()
        wait_until(lambda: len(read_ndjson(out)) == 2, 10, "records through front doors 300 and 131")

    def test_a_front_door_holds_a_bounded_number_of_bytes_over_all_its_producers(self):
        # 8 MiB per front door, 1 MiB messages: ZeroMQ may queue 8 per connection.
        self.start(extra="  limits: { max_message_bytes: 1048576, front_door_buffer_bytes: 8388608 }\n")
        port = free_port()
        # An exporter that never sends: the instance stalls, its credit runs out.
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/stuck", body={"pipeline": {
            "nodes": {"in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"},
                             "to": ["out"]},
                      "out": {"type": "exporter:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{free_port()}",
                                                                 "hwm": 1}}}}})
        self.assertEqual(status, 200, body)
        broker = next(pid for title, pid in self.engine_children().items() if title.startswith("drover-broker"))
        before = rss_kb(broker)
        record = msgpack.packb({"pad": "x" * (512 * 1024)})
        stop = time.monotonic() + 8
        sent = [0]

        def produce():
            sock = zmq.Context.instance().socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDHWM, 1000)
            sock.connect(f"tcp://127.0.0.1:{port}")
            while time.monotonic() < stop:
                try:
                    sock.send(record, zmq.NOBLOCK)
                    sent[0] += 1
                except zmq.Again:
                    time.sleep(0.01)
            sock.close()
        threads = [threading.Thread(target=produce) for _ in range(8)]
        peak = 0
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_kb(broker))
            time.sleep(0.05)
        for t in threads:
            t.join()
        grown = peak - before
        # Held by the broker: at most 8 MiB; queued by ZeroMQ: 8 connections x
        # 8 messages x 0.5 MiB = 32 MiB. Before the bound: 8 x 100 x 0.5 MiB.
        self.assertGreater(sent[0], 200, "the producers did push")
        if not SANITIZED:
            self.assertLess(grown, 64 * 1024, f"broker RSS grew {grown} kB")

    def engine_children(self):
        from harness import children_of, cmdline
        return {cmdline(c): c for c in children_of(self.engine.pid)}


if __name__ == "__main__":
    unittest.main(verbosity=2)
