"""droverctl's habits and drover-produce's stdin, through the real binaries:
options before or after the command, -w on status and rollout status,
errors that say what to type, bash completion in a real interactive bash
(inside tmux, keys typed, Tab pressed, the screen read back), and JSON lines
piped into drover-produce reaching a file; every way to name a pipeline and
suggestions for a wrong one (over HTTP: test_cli_http.py); specs as
files (diff, get -o yaml, validate): test_cli_specs.py."""

import json
import os
import re
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


class CliBase(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 100\n")
        self.port = free_port()
        self.out = self.engine.out_dir

    def ctl(self, *args, env_extra=None, **kw):
        env = dict(os.environ, DROVER_ADMIN=self.admin.endpoint)
        env.update(env_extra or {})
        return subprocess.run([f"{BIN}/droverctl", *args], capture_output=True, text=True, timeout=30, env=env, **kw)

    def put(self, body, wait=True):
        status, reply, _ = self.admin.http("PUT", PIPE + ("" if wait else "?wait=false"), body=body, timeout=30)
        self.assertIn(status, (200, 202), reply)
        return reply


class Cli(CliBase):
    def test_the_admin_socket_is_found_from_the_config_file(self):
        # No -e, no DROVER_ADMIN: -c names droverd's config, whose run_dir
        # holds admin.sock (as in the image, where the config's run_dir is
        # not /tmp/drover).
        env = {k: v for k, v in os.environ.items() if k != "DROVER_ADMIN"}
        run = lambda *args: subprocess.run([f"{BIN}/droverctl", *args], capture_output=True, text=True,  # noqa: E731
                                           timeout=30, env=env)
        found = run("-c", self.engine.config_path, "status", "-o", "json")
        self.assertEqual(found.returncode, 0, found.stderr)
        self.assertIn("pipelines", json.loads(found.stdout))
        missing = run("status", "--config", os.path.join(self.out, "nowhere.yaml"))
        self.assertEqual(missing.returncode, 2, missing.stderr)
        self.assertIn("nowhere.yaml: cannot read it", missing.stderr)
        # engine.admin.zmq, when the config sets it, is where droverd listens.
        other = os.path.join(self.out, "other.yaml")
        with open(other, "w") as f:
            f.write("engine:\n  run_dir: /nonexistent\n  admin: {zmq: \"%s\"}\n" % self.admin.endpoint)
        found = run("-c", other, "status", "-o", "json")
        self.assertEqual(found.returncode, 0, found.stderr)
        # DROVER_ADMIN still wins over the file, -e over both.
        env["DROVER_ADMIN"] = "ipc:///nonexistent/admin.sock"
        self.assertEqual(run("-c", self.engine.config_path, "status").returncode, 3)
        self.assertEqual(run("-c", other, "-e", self.admin.endpoint, "status").returncode, 0)

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
        self.assertIn("-o takes table, json or yaml, not \"xml\" (try: -o json)", self.ctl("status", "-o", "xml").stderr)
        self.assertIn('status takes no arguments, not "extra"', self.ctl("status", "extra").stderr)
        self.assertIn("-w works with status and rollout status", self.ctl("metrics", "-w").stderr)
        self.assertIn('unknown option "--bogus"', self.ctl("--bogus", "status").stderr)
        self.assertIn("expected a pipeline as GROUP/PIPELINE, GROUP:PIPELINE or PIPELINE (group default)",
                      self.ctl("describe", "a/b/c").stderr)
        self.assertIn("usage: droverctl [options] apply", self.ctl("apply", "--help").stdout)

    def test_options_it_does_not_know_change_nothing_and_dry_runs_say_what_would(self):
        self.put(spec(self.port, self.out, version=1))
        self.put(spec(self.port, self.out, version=2))
        generation = lambda: self.admin.http("GET", PIPE + "/status")[1]["generation"]
        self.assertEqual(generation(), 2)
        path = os.path.join(self.engine.dir, "gen.yaml")
        with open(path, "w") as f:
            json.dump(spec(self.port, self.out, version=3), f)
        # What a new operator typed: each refused with the usage, exit 2, nothing done.
        for args, said in ((["rollout", "undo", "default/p", "rollout-1", "--dry-run"], "with --to rollout-1"),
                           (["rollout", "undo", "default/p", "--to-revision=1"], 'does not take "--to-revision=1"'),
                           (["apply", "-f", path, "--force"], 'does not take "--force"'),
                           (["shutdown", "default/p", "now"], 'takes fewer arguments, not "now"'),
                           (["rollout", "pause", "default/p", "--to", "rollout-1"], "does not take --to")):
            out = self.ctl(*args)
            self.assertEqual(out.returncode, 2, (args, out.stdout, out.stderr))
            self.assertIn(said, out.stderr, args)
            self.assertEqual(generation(), 2, args)
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/--force")[0], 404)
        # Dry runs: what would happen, and nothing happens.
        out = self.ctl("rollout", "undo", "default/p", "--dry-run")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("dry run: would roll default/p back to the previous generation", out.stdout)
        self.assertIn("nothing was done", out.stdout)
        out = self.ctl("shutdown", "default/p", "--dry-run")
        self.assertEqual((out.returncode, out.stdout.strip()), (0, "dry run: would shut down default/p "
                                                                   "(generation 2, running); nothing was done"))
        self.assertEqual(self.ctl("delete", "default/nope", "--dry-run").returncode, 1)  # as the real one would
        self.assertEqual((generation(), self.admin.http("GET", PIPE + "/status")[1]["phase"]), (2, "running"))
        # Back to a named rollout's spec: rollout-1 made generation 1 (v: 1).
        (first,) = [r["rollout_id"] for r in self.admin.http("GET", PIPE + "/rollouts")[1] if r["target_generation"] == 1]
        out = self.ctl("rollout", "undo", "default/p", "--to", first)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(generation(), 3)
        self.assertEqual(self.admin.http("GET", PIPE)[1]["spec"]["nodes"]["t"]["config"]["set"]["v"], 1)
        gone = self.ctl("rollout", "undo", "default/p", "--to", "rollout-999")
        self.assertEqual(gone.returncode, 1)
        self.assertIn('no rollout "rollout-999"', gone.stderr)

    def test_messages_say_what_is_wrong_where_it_is(self):
        from capture import Capture
        capture = Capture()
        self.addCleanup(capture.close)
        capture.gate.clear()  # the backend holds every post: a drain waits for it
        gen = {"type": "receiver:generator", "config": {"rate": 100}, "to": ["out"]}
        out = {"type": "exporter:http", "config": {"endpoint": capture.url("/in"), "batch": {"max_delay_ms": 10}}}
        self.put({"pipeline": {"nodes": {"in": gen, "out": out}}})
        wait_until(lambda: capture.requests, 10, "a post held by the backend")
        # A shutdown whose drain outlasts -t: said for what it is, and followed to its end.
        said = os.path.join(self.engine.dir, "shutdown.err")
        with open(said, "w") as err:
            shutdown = subprocess.Popen([f"{BIN}/droverctl", "-t", "1", "shutdown", "default/p"], stdout=subprocess.PIPE,
                                        stderr=err, text=True, env=dict(os.environ, DROVER_ADMIN=self.admin.endpoint))
        read = lambda: open(said).read()
        wait_until(lambda: "waiting for default/p to drain" in read() or shutdown.poll() is not None, 20,
                   "droverctl to say it waits for the drain")
        capture.gate.set()
        shutdown.communicate(timeout=60)
        self.assertEqual(shutdown.returncode, 0, read())
        self.assertIn("waiting for default/p to drain", read())
        self.assertNotIn("is droverd running", read())
        # No rollout under way is not a wrong name.
        promote = self.ctl("rollout", "promote", "p")
        self.assertEqual(promote.returncode, 1)
        self.assertIn("no rollout under way", promote.stderr)
        self.assertNotIn("did you mean", promote.stderr)
        # A port: out of range said so; taken, the node named; a wrong OTLP path, the paths served.
        import socket
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        self.addCleanup(taken.close)
        for endpoint, said in (("127.0.0.1:99999", "port must be 1 to 65535"),
                               (f"127.0.0.1:{taken.getsockname()[1]}", "node in (receiver:otlp) config.endpoint: ")):
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/o", body={"pipeline": {"nodes": {
                "in": {"type": "receiver:otlp", "config": {"endpoint": endpoint}, "to": ["out"]},
                "out": {"type": "exporter:null"}}}})
            self.assertIn(said, json.dumps(body), endpoint)
        port = free_port()
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/o", body={"pipeline": {"nodes": {
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}})
        self.assertEqual(status, 200, body)
        import urllib.request
        with self.assertRaises(urllib.error.HTTPError) as wrong:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/log", data=b"{}",
                                                          headers={"Content-Type": "application/json"}), timeout=5)
        self.assertIn("the paths served are: /v1/logs /v1/traces /v1/metrics", wrong.exception.read().decode())

    def test_status_shows_the_pipelines_totals_through_a_resize_and_a_replace(self):
        gen = lambda cores, tag: {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": 0, "count": 1000, "record": {"t": tag}},
                   "to": ["out"]}, "out": {"type": "exporter:null"}}}}
        row = lambda: self.ctl("status").stdout.splitlines()[1].split()

        def settled(total):  # RECORDS_IN as status and /metrics say it
            metric = re.search(r'^drover_pipeline_records_in_total\{group="default",pipeline="p"\} (\d+)$',
                               self.admin.http("GET", "/metrics")[1], re.M)
            return metric and int(metric.group(1)) == total and int(row()[6]) == total
        self.put(gen(2, "a"))
        wait_until(lambda: settled(2000), 10, "2000 records in")
        self.put(gen(1, "a"))  # a resize: the removed core's 1000 stay counted
        wait_until(lambda: settled(2000), 10, "still 2000 after the resize")
        self.put(gen(1, "b"))  # a replace: the new generation adds its 1000
        wait_until(lambda: settled(3000), 10, "3000 after the replace")

    def test_events_shows_the_kept_events_first_as_curl_does(self):
        self.put(spec(self.port, self.out))
        kept = self.ctl("-o", "json", "events", "--count", "1", "--for", "10", "rollout.")
        self.assertEqual(kept.returncode, 0, kept.stderr)
        self.assertEqual(json.loads(kept.stdout.splitlines()[0])["topic"].split(".")[0], "rollout")
        new = self.ctl("-o", "json", "events", "--no-history", "--for", "1", "rollout.")
        self.assertEqual((new.returncode, new.stdout), (0, ""), "--no-history: only what happens from now on")

    def test_every_name_form_and_suggestions(self):
        self.put(spec(self.port, self.out))
        for name in ("default/p", "default:p", "p"):
            out = self.ctl("describe", name)
            self.assertEqual(out.returncode, 0, (name, out.stderr))
            self.assertIn("Pipeline:    default/p", out.stdout)
        # The name status prints is one describe takes.
        shown = self.ctl("status").stdout.splitlines()[1].split()[0]
        self.assertEqual(self.ctl("describe", shown).returncode, 0, shown)
        wrong = self.ctl("describe", "default/q")
        self.assertEqual(wrong.returncode, 1)
        self.assertIn("did you mean: default/p?", wrong.stderr)
        self.assertIn("did you mean: default/p?", self.ctl("rollout", "history", "pp").stderr)
        far = self.ctl("describe", "nothing-like-it")
        self.assertNotIn("did you mean", far.stderr)
        # A failed apply does not print a core line for cores nothing happened to.
        bad = dict(spec(self.port, self.out))
        bad["pipeline"] = dict(bad["pipeline"], nodes=dict(bad["pipeline"]["nodes"]))
        bad["pipeline"]["nodes"]["out"] = {"type": "exporter:file", "config": {"path": "/proc/nope/x.ndjson"}}
        path = os.path.join(self.engine.dir, "bad.json")
        with open(path, "w") as f:
            json.dump(bad, f)
        failed = self.ctl("apply", "-f", path, "default/p")
        self.assertEqual(failed.returncode, 1, failed.stdout + failed.stderr)
        self.assertNotRegex(failed.stderr, r"core \d+ \w+: \n", "a core line with nothing to say")

    def test_explain_is_the_node_reference_and_its_examples_validate(self):
        out = self.ctl("explain", "--markdown")
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(os.path.join(os.path.dirname(__file__), "../../docs/nodes.md")) as f:
            self.assertEqual(out.stdout, f.read(), "docs/nodes.md is stale: build/bin/droverctl explain --markdown > docs/nodes.md")
        kinds = [line.split()[0] for line in self.ctl("explain").stdout.splitlines()[1:]]
        self.assertEqual(len(kinds), 25)
        for kind in kinds:
            text = self.ctl("explain", kind).stdout
            self.assertIn(f"TYPE:     {kind}", text)
            example = text.split("EXAMPLE:\n  ")[1].splitlines()[0]
            role = kind.split(":")[0]
            nodes = {"receiver": f"nodes:\n  n: {example}\n  out: {{type: exporter:null}}\n",
                     "processor": f"nodes:\n  in: {{type: receiver:generator, to: [n]}}\n  n: {example}\n"
                                  "  out: {type: exporter:null}\n",
                     "exporter": f"nodes:\n  in: {{type: receiver:generator, to: [n]}}\n  n: {example}\n"}[role]
            path = os.path.join(self.engine.dir, "example.yaml")
            with open(path, "w") as f:
                f.write(nodes)
            checked = self.ctl("validate", "-f", path)
            self.assertEqual(checked.returncode, 0, (kind, nodes, checked.stderr))
        wrong = self.ctl("explain", "receiver:otlpp")
        self.assertEqual(wrong.returncode, 2)
        self.assertIn("did you mean receiver:otlp?", wrong.stderr)
        # Every key path, as kubectl explain takes them: each row of the spec's table, with its type and default.
        with open(os.path.join(os.path.dirname(__file__), "../../schemas/pipeline_spec.md")) as f:
            rows = [line.split(" | ") for line in f if line.startswith("| `")]
        self.assertGreater(len(rows), 20)
        for row in rows:
            path, kind, default = row[0].strip("| `"), row[1], row[2].strip("`")
            said = self.ctl("explain", path).stdout.splitlines()[0]
            self.assertEqual(said, f"{path} <{kind}> (default {default})", path)
        buffer = self.ctl("explain", "policies.buffer").stdout
        self.assertEqual([l.split()[0] for l in buffer.splitlines() if not l.startswith(" ")],
                         [f"policies.buffer.{k}" for k in ("type", "max_bytes", "when_full", "sync", "sync_interval_ms")])
        retry = self.ctl("explain", "exporter:http.retry")
        self.assertEqual(retry.returncode, 0, retry.stderr)
        self.assertIn("exporter:http.config.retry <map>", retry.stdout)
        self.assertIn("max_elapsed_secs", retry.stdout)

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
        self.assertIn("rollout holding (canary) until ", out.stdout)
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
            #  Asked again until the screen is clear: a busy machine's bash may
            #  still be drawing a completion when the first C-c arrives.
            def attempt():
                keys("C-c")
                keys("clear", "Enter")
                return wait_for(lambda: screen().strip() == "$", 1.0)
            wait_until(attempt, 20, "a clear screen", interval=0.1)

        def wait_for(predicate, secs):
            deadline = time.monotonic() + secs * SLOW
            while time.monotonic() < deadline:
                if predicate():
                    return True
                time.sleep(0.02)
            return False

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
