"""What receiver:file reads that a hostile or careless writer made (issue 47,
docs/security.md "What drover reads itself"): a message split into more
pieces than a read holds (containerd's 16 KiB CRI pieces, docker's json-file
pieces, a long multiline stack trace) is joined up to max_line_bytes and
cut there, never wedging the file; a newline-less stretch of gigabytes (the
hole a copytruncate leaves) is skipped in bounded turns, its end
checkpointed; a checkpoint with fields out of range is set aside; a file
whose name is not UTF-8 is checkpointed like any other; a directory link
where a wildcard matches a directory, or a link flipped while it is
looked at, never exports a file from outside the globs' directories; 8,000
files in one directory are all read without a heartbeat missed, and idle
ones cost next to nothing."""

import glob
import json
import os
import shutil
import signal
import tempfile
import threading
import time

from harness import wait_until
from test_file_receiver import FileReceiverBase

PIECE = 16 * 1024  # containerd's and docker's split size


def cri_pieces(message, stream="stdout"):
    """A CRI message as the runtime writes it: P pieces of 16 KiB, then F."""
    parts = [message[i:i + PIECE] for i in range(0, len(message), PIECE)] or [""]
    return [f"2026-11-26T10:00:00Z {stream} {'F' if k == len(parts) - 1 else 'P'} {part}"
            for k, part in enumerate(parts)]


class HostileFiles(FileReceiverBase):
    def status(self):
        return self.admin.http("GET", "/api/v1/groups/default/pipelines/files/status")[1]

    def errors(self):
        return ((self.status().get("instances") or [{}])[0].get("nodes") or {}).get("in", {}).get("errors")

    def restarts(self):
        return [i["restarts"] for i in self.status()["instances"]]

    def test_a_cri_message_of_many_pieces_is_joined_then_the_file_goes_on(self):
        log = os.path.join(self.logdir(), "0.log")
        long = "".join(chr(ord("a") + n % 26) for n in range(300 * 1024))  # 19 pieces: more than a read holds
        self.append(log, cri_pieces("first") + cri_pieces(long) + cri_pieces("after"))
        self.start({"include": [log], "format": "cri", "start_at": "beginning"}, heartbeat_ms=1000)
        bodies = self.wait_bodies(["first", "after"], 20)
        self.assertEqual(bodies, ["first", long, "after"], "joined whole: under max_line_bytes (1 MiB)")
        self.append(log, cri_pieces("later"))
        self.wait_bodies(["later"])
        self.assertEqual(self.restarts(), [0])

    def test_a_cri_message_over_max_line_bytes_is_cut_and_its_rest_dropped(self):
        log = os.path.join(self.logdir(), "0.log")
        long = "x" * (200 * 1024) + "y" * (200 * 1024)
        self.append(log, cri_pieces("first") + cri_pieces(long) + cri_pieces("after"))
        self.start({"include": [log], "format": "cri", "start_at": "beginning", "max_line_bytes": 100000})
        self.wait_bodies(["first", "after"], 20)
        self.assertEqual(self.bodies(), ["first", "x" * 100000, "after"],
                         "cut at max_line_bytes; the pieces after dropped up to its F piece")
        wait_until(lambda: self.errors() == 1, 10, "the cut message counted once")
        #  The drop is settled: the checkpoint reaches the file's end.
        wait_until(lambda: self.checkpoint(log) == os.path.getsize(log), 10, "the checkpoint at the file's end")

    def test_a_docker_message_of_many_pieces_is_cut_and_the_file_goes_on(self):
        log = os.path.join(self.logdir(), "c-json.log")
        long = "z" * (400 * 1024)
        pieces = [long[i:i + PIECE] for i in range(0, len(long), PIECE)]
        lines = [json.dumps({"log": "first\n", "stream": "stdout", "time": "2026-11-26T10:00:00Z"})]
        lines += [json.dumps({"log": p + ("\n" if k == len(pieces) - 1 else ""), "stream": "stdout",
                              "time": "2026-11-26T10:00:00Z"}) for k, p in enumerate(pieces)]
        lines += [json.dumps({"log": "after\n", "stream": "stdout", "time": "2026-11-26T10:00:01Z"})]
        self.append(log, lines)
        self.start({"include": [log], "format": "docker", "start_at": "beginning", "max_line_bytes": 100000})
        self.wait_bodies(["first", "after"], 20)
        self.assertEqual(self.bodies(), ["first", "z" * 100000, "after"])

    def test_a_stack_trace_longer_than_a_read_is_joined_then_cut_at_max_line_bytes(self):
        java = os.path.join(self.logdir(), "java.log")
        #  ~320 KB: more than the first read's 128 KiB, fewer lines than max_lines.
        frames = [f"\tat com.example.Frame{n}.call(Frame{n}.java:{n}) " + "." * 360 for n in range(800)]
        self.append(java, ["2026-11-26 first", "2026-11-26 Exception in thread main"] + frames +
                    ["2026-11-26 after"])
        self.start({"include": [java], "start_at": "beginning",
                    "multiline": {"start_pattern": "^\\d{4}-", "max_wait_ms": 200}})
        bodies = wait_until(lambda: (lambda b: b if "2026-11-26 after" in b else None)(self.bodies()), 20,
                            "the message after the trace")
        self.assertEqual(bodies[1], "\n".join(["2026-11-26 Exception in thread main"] + frames),
                         "800 lines joined: fewer than max_lines, more than a read")

    def test_a_stack_trace_over_max_line_bytes_is_cut_and_the_next_message_read(self):
        java = os.path.join(self.logdir(), "java.log")
        frames = [f"\tat Frame{n}.call " + "." * 180 for n in range(600)]
        self.append(java, ["2026-11-26 Exception in thread main"] + frames + ["2026-11-26 after"])
        self.start({"include": [java], "start_at": "beginning", "max_line_bytes": 5000,
                    "multiline": {"start_pattern": "^\\d{4}-", "max_wait_ms": 200}})
        bodies = wait_until(lambda: (lambda b: b if "2026-11-26 after" in b else None)(self.bodies()), 20,
                            "the message after the trace")
        whole = "\n".join(["2026-11-26 Exception in thread main"] + frames)
        self.assertEqual(bodies, [whole[:5000], "2026-11-26 after"], "cut, the trace's other lines dropped")
        wait_until(lambda: self.errors() == 1, 10, "the cut message counted")

    def test_a_hole_of_gigabytes_is_skipped_in_bounded_turns_and_checkpointed(self):
        logs = self.logdir()
        holey, other = os.path.join(logs, "holey.log"), os.path.join(logs, "other.log")
        self.append(other, ["other-0"])
        with open(holey, "wb") as f:  # a writer without O_APPEND after a copytruncate: a sparse start
            f.write(b"first\n")
            f.seek(32 * 1024 ** 3)
            f.write(b"rest of the long line\nnext\n")
        #  Heartbeats as deployed (1 s, killed after 3 missed): reading 32 GiB
        #  in one turn, as before, took far longer than that.
        self.start({"include": [f"{logs}/*.log"], "start_at": "beginning", "max_line_bytes": 100}, heartbeat_ms=1000)
        self.wait_bodies(["first", "next", "other-0"], 60)
        self.assertEqual(self.restarts(), [0], "heartbeats on time through 32 GiB: never killed")
        wait_until(lambda: self.checkpoint(holey) == os.path.getsize(holey), 10, "the skip checkpointed")
        self.assertEqual(sorted(self.bodies()), sorted(["first", "\0" * 100, "next", "other-0"]),
                         "the hole is one line, cut; nothing read twice")

    def test_a_checkpoint_out_of_range_is_set_aside_not_trusted(self):
        log = os.path.join(self.logdir(), "app.log")
        self.append(log, ["one", "two"])
        engine = self.start({"include": [log], "start_at": "beginning"}, heartbeat_ms=1000)
        self.wait_bodies(["one", "two"])
        wait_until(lambda: self.checkpoint(log) == os.path.getsize(log), 10, "the checkpoint at the end")
        engine.signal(signal.SIGKILL)
        engine.wait_exit()
        engine.log.close()
        st = os.stat(log)
        path = glob.glob(os.path.join(engine.run_dir, "buffer", "default", "files", "checkpoints",
                                      f"{st.st_dev:x}-{st.st_ino:x}.json"))[0]
        with open(path) as f:
            doc = json.load(f)
        doc["fingerprint"]["bytes"] = 1 << 20  # more than the 1024 it may be: read into a 1 KiB buffer before
        with open(path, "w") as f:
            json.dump(doc, f)
        self.append(log, ["three"])
        engine.start()
        self.admin.wait_ready(20)
        engine.wait_log(r"checkpoint set aside .*fingerprint\.bytes", 10)
        self.wait_bodies(["three"])
        self.assertEqual(self.restarts(), [0])
        self.assertTrue(os.path.exists(path + ".bad"), "kept beside for whoever looks")

    def test_a_forged_checkpoint_naming_a_file_outside_the_globs_exports_nothing(self):
        """A checkpoint is outside input: planted in the directory, one that
        names by device and inode a file where no glob looks, and one whose
        path a glob matches through a directory link pointing elsewhere,
        are both left be, and so are the rotated siblings they would lead
        to. Before, the pass over the checkpoints looked for the file in
        the directory the checkpoint names and read it as one renamed away
        while nobody ran."""
        logs = self.logdir()
        os.makedirs(os.path.join(logs, "app"))
        log = os.path.join(logs, "app", "app.log")
        self.append(log, ["one"])
        elsewhere = tempfile.mkdtemp(prefix="drv-secret-")
        self.addCleanup(shutil.rmtree, elsewhere, True)
        secrets = [os.path.join(elsewhere, name) for name in ("secret", "key.log")]
        for secret in secrets:
            self.append(secret, [f"not for export: {secret}"])
            self.append(secret + ".1", [f"nor this: {secret}"])
        os.symlink(elsewhere, os.path.join(logs, "evil"))  # matched by the glob's wildcard
        engine = self.start({"include": [f"{logs}/*/*.log"], "start_at": "beginning"}, heartbeat_ms=1000)
        self.wait_bodies(["one"])
        wait_until(lambda: self.checkpoint(log) == os.path.getsize(log), 10, "the checkpoint at the end")
        engine.signal(signal.SIGKILL)
        engine.wait_exit()
        engine.log.close()
        directory = os.path.join(engine.run_dir, "buffer", "default", "files", "checkpoints")
        for secret, path in zip(secrets, (os.path.join(elsewhere, "gone"), os.path.join(logs, "evil", "gone.log"))):
            st = os.stat(secret)
            name = os.path.join(directory, f"{st.st_dev:x}-{st.st_ino:x}.json")
            with open(name, "w") as f:
                json.dump({"dev": st.st_dev, "ino": st.st_ino, "fingerprint": {"bytes": 0, "crc32c": 0},
                           "offset": 0, "path": path, "origin": secret}, f)
            os.utime(name, (1, 1))  # older than the siblings
        self.append(log, ["two"])
        engine.start()
        self.admin.wait_ready(20)
        self.wait_bodies(["one", "two"])
        engine.wait_log(r"following file path=.*app\.log from=\"its checkpoint\"", 10)
        #  The pass over the checkpoints ran before "two" was read: anything
        #  it exported would be out by now.
        self.assertEqual(sorted(self.bodies()), ["one", "two"], "nothing from where no glob looks")
        self.assertNotIn(f"following file path={elsewhere}", engine.log_text())
        self.assertNotIn(f"following file path={logs}/evil", engine.log_text())

    def test_a_file_whose_name_is_not_utf8_is_checkpointed(self):
        logs = self.logdir()
        name = os.path.join(logs.encode(), b"caf\xe9.log")
        with open(name, "wb") as f:
            f.write(b"latin-1 named\n")
        self.start({"include": [f"{logs}/*.log"], "start_at": "beginning"})
        self.wait_bodies(["latin-1 named"])
        st = os.stat(name)
        cp = os.path.join(self.engine.run_dir, "buffer", "default", "files", "checkpoints",
                          f"{st.st_dev:x}-{st.st_ino:x}.json")
        def saved():
            if os.path.exists(cp):
                with open(cp) as f:
                    doc = json.load(f)
                return doc if doc.get("offset") == 14 else None
            return None
        doc = wait_until(saved, 10, "its checkpoint saved")
        self.assertEqual(bytes.fromhex(doc["path_hex"]), name, "its name kept byte for byte")
        self.assertNotIn("out of memory", self.engine.log_text())

    def test_a_directory_link_matched_by_a_wildcard_is_not_walked_into(self):
        logs = self.logdir()
        pods, outside = os.path.join(logs, "pods"), os.path.join(logs, "outside")
        os.makedirs(os.path.join(pods, "shop_cart_1", "server"))
        os.makedirs(os.path.join(outside, "server"))
        self.append(os.path.join(outside, "server", "0.log"), ["secret"])
        os.symlink(outside, os.path.join(pods, "evil_pod_2"))  # a directory link where */ matches
        self.append(os.path.join(pods, "shop_cart_1", "server", "0.log"), ["mine"])
        self.start({"include": [f"{pods}/*/*/*.log"], "start_at": "beginning", "kubernetes": True})
        self.wait_bodies(["mine"])
        self.append(os.path.join(pods, "shop_cart_1", "server", "0.log"), ["mine again"])
        self.wait_bodies(["mine again"])  # a scan after the one that found both
        self.assertNotIn("secret", self.bodies())

    def test_a_link_flipped_while_it_is_looked_at_never_exports_a_file_outside(self):
        logs = self.logdir()
        outside = logs + "-outside"
        os.makedirs(outside)
        self.addCleanup(shutil.rmtree, outside, True)
        inside = os.path.join(logs, "inside.txt")  # not matched by the glob: only through the link
        self.append(inside, ["inside"])
        secret = os.path.join(outside, "secret.log")
        self.append(secret, ["secret"])
        link = os.path.join(logs, "flip.log")
        os.symlink(inside, link)
        self.start({"include": [f"{logs}/*.log"], "start_at": "beginning", "poll_interval_ms": 10})
        self.wait_bodies(["inside"])
        stop = threading.Event()

        def flip():
            n = 0
            while not stop.is_set():
                n += 1
                os.symlink(secret if n % 2 else inside, link + ".new")
                os.replace(link + ".new", link)
        flipper = threading.Thread(target=flip)
        flipper.start()
        try:
            deadline = time.monotonic() + 3  # the old check lost this race in 0.2 to 1.1 s
            while time.monotonic() < deadline:
                self.assertNotIn("secret", self.bodies())
                time.sleep(0.05)  # sampling what was exported while the link flips
        finally:
            stop.set()
            flipper.join()
        self.assertNotIn("secret", self.bodies())

    @staticmethod
    def cpu_secs(pid):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def test_eight_thousand_files_in_one_directory_are_read_and_idle_ones_cost_little(self):
        logs = self.logdir()
        for n in range(8000):
            with open(os.path.join(logs, f"app-{n}.log"), "w") as f:
                f.write(f"line-{n}\n")
        #  Heartbeats as deployed (1 s): the quadratic scan took minutes.
        self.start({"include": [f"{logs}/*.log"], "start_at": "beginning"}, heartbeat_ms=1000)
        self.wait_bodies([f"line-{n}" for n in range(8000)], 120)
        self.assertEqual(self.restarts(), [0], "no heartbeat missed while 8,000 files were found")
        (pid,) = list(self.engine.instances().values())
        #  Idle: nothing written. What the instance spends in 2 s, sampled.
        wait_until(lambda: all(self.checkpoint(os.path.join(logs, f"app-{n}.log")) for n in (0, 7999)), 10,
                   "checkpoints saved")
        before, started = self.cpu_secs(pid), time.monotonic()
        time.sleep(2)  # measuring CPU over a span, not a synchronisation
        spent = (self.cpu_secs(pid) - before) / (time.monotonic() - started)
        self.assertLess(spent, 0.15, f"8,000 idle files cost {spent:.0%} of a core")
        self.append(os.path.join(logs, "app-4321.log"), ["grown"])
        self.wait_bodies(["grown"])


if __name__ == "__main__":
    import unittest
    unittest.main()
