"""droverctl's habits and drover-produce's stdin, through the real binaries:
options before or after the command, -w on status and rollout status,
errors that say what to type, bash completion in a real interactive bash
(inside tmux, keys typed, Tab pressed, the screen read back), and JSON lines
piped into drover-produce reaching a file."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import BIN, SLOW, EngineTest, read_ndjson, free_port, wait_until

PIPE = "/api/v1/groups/default/pipelines/p"


def spec(port, out, ack=False, version=1, canary=None):
    rollout = {"canary": canary} if canary else {}
    return {"pipeline": {
        "nodes": {
            "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}", "ack": ack},
                   "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"set": {"v": version}}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{out}/p-{{generation}}.ndjson"}}},
        "policies": {"rollout": rollout}}}


class Cli(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 100\n")
        self.port = free_port()
        self.out = self.engine.out_dir

    def ctl(self, *args, **kw):
        env = dict(os.environ, DROVER_ADMIN=self.admin.endpoint)
        return subprocess.run([f"{BIN}/droverctl", *args], capture_output=True, text=True, timeout=30, env=env, **kw)

    def put(self, body, wait=True):
        status, reply, _ = self.admin.http("PUT", PIPE + ("" if wait else "?wait=false"), body=body, timeout=30)
        self.assertIn(status, (200, 202), reply)
        return reply

    def test_options_go_before_or_after_the_command(self):
        self.put(spec(self.port, self.out))
        for args in (["status", "-o", "json"], ["-o", "json", "status"], ["status", "--output=json"],
                     ["status", "-ojson"], ["status", "-e", self.admin.endpoint, "-o", "json", "-t", "5"]):
            out = self.ctl(*args)
            self.assertEqual(out.returncode, 0, (args, out.stderr))
            self.assertIn("default:p", json.loads(out.stdout)["pipelines"], args)
        table = self.ctl("status")
        self.assertIn("PIPELINE", table.stdout)
        # Errors say what to type instead.
        wrong = self.ctl("stauts")
        self.assertEqual(wrong.returncode, 2)
        self.assertIn('unknown command "stauts"; did you mean: droverctl status', wrong.stderr)
        self.assertIn("did you mean: droverctl describe", self.ctl("descrbe", "default/p").stderr)
        self.assertIn("-o takes table or json, not \"yaml\" (try: -o json)", self.ctl("status", "-o", "yaml").stderr)
        self.assertIn('status takes no arguments, got "extra"', self.ctl("status", "extra").stderr)
        self.assertIn("-w works with status and rollout status", self.ctl("metrics", "-w").stderr)
        self.assertIn('unknown option "--bogus"', self.ctl("--bogus", "status").stderr)
        self.assertIn("expected GROUP/PIPELINE", self.ctl("describe", "p").stderr)
        self.assertIn("usage: droverctl [options] apply", self.ctl("apply", "--help").stdout)

    def test_watch_status_and_a_rollout(self):
        env = dict(os.environ, DROVER_ADMIN=self.admin.endpoint)
        watcher = subprocess.Popen([f"{BIN}/droverctl", "status", "-w"], stdout=subprocess.PIPE, text=True, env=env)
        self.addCleanup(watcher.stdout.close)
        self.addCleanup(watcher.wait)
        self.addCleanup(watcher.kill)
        lines = []

        def saw(text, timeout=20):
            deadline = time.monotonic() + timeout * SLOW
            while time.monotonic() < deadline:  # a table comes every 2 s: readline does not block long
                line = watcher.stdout.readline()
                lines.append(line)
                if text in line or not line:
                    return text in line
            return False

        self.assertTrue(saw("PIPELINE"), lines)
        self.put(spec(self.port, self.out))
        self.assertTrue(saw("default:p"), "the watch shows a pipeline created after it started")
        watcher.kill()
        # rollout status -w follows a canary through its hold to the end.
        self.put(spec(self.port, self.out, version=2, canary={"hold_secs": 1}), wait=False)
        out = self.ctl("rollout", "status", "default/p", "-w")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("rollout paused: canary holds until", out.stdout)
        self.assertIn("succeeded", out.stdout.splitlines()[-1])

    def test_bash_completion_in_an_interactive_shell(self):
        if not shutil.which("tmux"):
            self.fail("tmux is needed (scripts/install-deps.sh installs it)")
        self.put(spec(self.port, self.out))
        home = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, home, True)
        session = f"drv{os.getpid()}"
        env = dict(os.environ, HOME=home, PATH=f"{os.path.abspath(BIN)}:{os.environ['PATH']}",
                   DROVER_ADMIN=self.admin.endpoint, PS1="$ ", TERM="xterm")
        subprocess.run(["tmux", "-L", session, "new-session", "-d", "-x", "200", "-y", "50",
                        "bash --norc --noprofile -i"], env=env, check=True)
        self.addCleanup(subprocess.run, ["tmux", "-L", session, "kill-server"], capture_output=True)

        def keys(*k):
            subprocess.run(["tmux", "-L", session, "send-keys", *k], check=True)

        def screen():
            return subprocess.run(["tmux", "-L", session, "capture-pane", "-p"], capture_output=True,
                                  text=True).stdout

        def clear():
            keys("C-c")
            keys("clear", "Enter")
            wait_until(lambda: screen().strip() == "$", 10, "a clear screen")

        keys("PS1='$ '", "Enter")
        keys("source <(droverctl completion bash)", "Enter")
        keys("echo loaded-$(complete -p droverctl | wc -l)", "Enter")
        wait_until(lambda: "loaded-1" in screen(), 10, "the completion loaded")
        cases = [("droverctl sta", "droverctl status"),
                 ("droverctl rollout pa", "droverctl rollout pause"),
                 ("droverctl rollout pause def", "droverctl rollout pause default/p"),
                 ("droverctl describe def", "droverctl describe default/p"),
                 ("droverctl status -o js", "droverctl status -o json"),
                 ("droverctl -o json get pip", "droverctl -o json get pipelines")]
        for typed, expected in cases:
            clear()
            keys(typed, "Tab")
            wait_until(lambda: expected in screen(), 10, f"Tab after '{typed}' to give '{expected}'")
        # And a completed command line runs, options after the command.
        clear()
        keys("droverctl status -o json | head -c 1; echo", "Enter")
        wait_until(lambda: "{" in (line.strip() for line in screen().splitlines()), 10, "the JSON's first byte")

    def test_drover_produce_reads_json_lines_from_stdin(self):
        self.put(spec(self.port, self.out))
        self.engine.wait_log(r"instance connected instance=default/p@1#0")
        lines = "".join(json.dumps({"msg": f"m{i}", "n": i}) + "\n" for i in range(250))
        lines += "not json\n[1, 2]\n\n"
        produce = subprocess.run([f"{BIN}/drover-produce", f"tcp://127.0.0.1:{self.port}"], input=lines,
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(produce.returncode, 1, "skipped lines make the exit code 1")
        self.assertIn("line 251 skipped", produce.stderr)
        self.assertIn("line 252 skipped: expected a JSON object", produce.stderr)
        self.assertIn("records=250 skipped=2", produce.stdout)
        path = os.path.join(self.out, "p-1.ndjson")
        wait_until(lambda: len(read_ndjson(path)) == 250, 10, "250 records in the file")
        self.assertEqual(sorted(r["n"] for r in read_ndjson(path)), list(range(250)))
        # --ack against an ack-mode receiver: each batch acknowledged.
        ack_port = free_port()
        self.put(spec(ack_port, self.out, ack=True, version=2))
        produce = subprocess.run([f"{BIN}/drover-produce", f"tcp://127.0.0.1:{ack_port}", "--ack", "--batch", "7"],
                                 input=lines[:lines.index("not json")], capture_output=True, text=True, timeout=30)
        self.assertEqual(produce.returncode, 0, produce.stderr)
        self.assertIn("sent=36 records=250 skipped=0", produce.stdout)
        self.assertEqual(len(read_ndjson(os.path.join(self.out, "p-2.ndjson"))), 250, "acknowledged: already there")
        # Nobody listening: an error that says so, not a silent loss.
        nobody = subprocess.run([f"{BIN}/drover-produce", f"tcp://127.0.0.1:{free_port()}", "--timeout", "300"],
                                input='{"a": 1}\n', capture_output=True, text=True, timeout=30)
        self.assertEqual(nobody.returncode, 1)
        self.assertIn("is a receiver:zmq listening at", nobody.stderr)


if __name__ == "__main__":
    unittest.main()
