"""dry_run=instantiate through the real binaries: the candidate is built in
a throwaway instance (a real drover-worker in probe mode) and its listen
endpoints are probed; what would fail comes back as 422 with every problem
in details; a good candidate answers 200; nothing running is touched and
nothing is left behind (no file, no directory, no socket, no rollout)."""

import json
import os
import socket
import subprocess
import unittest

from harness import BIN, EngineTest, free_port

PIPE = "/api/v1/groups/default/pipelines/p"


def spec(port, out, path=None, script=None, syslog=None):
    nodes = {
        "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["lua"]},
        "lua": {"type": "processor:lua",
                "config": {"script": script or "function process(r) r.v = 2; return r end"}, "to": ["out"]},
        "out": {"type": "exporter:file", "config": {"path": path or f"{out}/p-{{generation}}.ndjson"}},
    }
    if syslog:
        nodes["sys"] = {"type": "receiver:syslog", "config": {"endpoint": syslog}, "to": ["out"]}
    return {"pipeline": {"cores": {"count": 1}, "nodes": nodes}}


class Instantiate(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.port = free_port()
        self.out = self.engine.out_dir
        status, body, _ = self.admin.http("PUT", PIPE, body=spec(self.port, self.out), timeout=30)
        self.assertEqual(status, 200, body)
        self.pids = self.engine.wait_instances(["default/p@1#0"])

    def untouched(self):
        self.assertEqual(self.engine.instances(), self.pids, "the running instance is untouched")
        status, rollouts, _ = self.admin.http("GET", PIPE + "/rollouts")
        self.assertEqual([r["action"] for r in rollouts], ["create"], "no rollout was started")
        self.assertEqual(self.admin.http("GET", PIPE + "/status")[1]["generation"], 1)

    def test_what_would_fail_comes_back_with_every_problem(self):
        taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        taken.bind(("127.0.0.1", 0))
        self.addCleanup(taken.close)
        busy = f"udp://127.0.0.1:{taken.getsockname()[1]}"
        bad = spec(self.port, self.out, path="/proc/drover-nope/{core}.ndjson",
                   script="local limit = nil\nlocal x = limit + 1\nfunction process(r) return r end", syslog=busy)
        for transport in ("http", "zmq"):
            if transport == "http":
                status, body, _ = self.admin.http("PUT", PIPE + "?dry_run=instantiate", body=bad, timeout=30)
            else:
                status, body = self.admin.zmq("PUT", PIPE, query={"dry_run": "instantiate"}, body=bad, timeout=30)
            self.assertEqual(status, 422, body)
            self.assertIn("the candidate cannot be instantiated", body["error"]["message"])
            details = {d["path"]: d["message"] for d in body["error"]["details"]}
            self.assertEqual(set(details), {"nodes.out", "nodes.lua", "nodes.sys.config.endpoint"}, details)
            self.assertIn("cannot open /proc/drover-nope/0.ndjson", details["nodes.out"])
            # It compiles (validation checks that); its top level fails when it runs.
            self.assertIn("attempt to perform arithmetic on a nil value", details["nodes.lua"])
            self.assertIn(busy, details["nodes.sys.config.endpoint"])
        self.untouched()
        # A plain dry run does not build anything: it says yes to the same spec.
        status, body, _ = self.admin.http("PUT", PIPE + "?dry_run=true", body=bad, timeout=30)
        self.assertEqual((status, body["action"]), (200, "replace"))

    def test_a_good_candidate_answers_200_and_leaves_nothing_behind(self):
        fresh_dir = os.path.join(self.out, "not-yet", "deeper")
        port = free_port()
        good = spec(self.port, self.out, path=f"{fresh_dir}/p-{{generation}}.ndjson",
                    syslog=f"udp://127.0.0.1:{port}")
        status, body, _ = self.admin.http("PUT", PIPE + "?dry_run=instantiate", body=good, timeout=30)
        self.assertEqual(status, 200, body)
        self.assertEqual((body["dry_run"], body["instantiated"], body["action"]), (True, True, "replace"))
        self.assertFalse(os.path.exists(os.path.join(self.out, "not-yet")), "no directory was made")
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.bind(("127.0.0.1", port))  # the probed endpoint was let go
        probe.close()
        self.untouched()
        # droverctl apply --dry-run=instantiate, both ways.
        path = os.path.join(self.engine.dir, "candidate.json")
        for candidate, code, text in ((good, 0, "built in a throwaway instance, it would start"),
                                      (spec(self.port, self.out, path="/proc/drover-nope/x.ndjson"), 1,
                                       "the candidate cannot be instantiated: nodes.out")):
            with open(path, "w") as f:
                json.dump(candidate, f)
            out = subprocess.run([f"{BIN}/droverctl", "-e", self.admin.endpoint, "apply", "-f", path, "default/p",
                                  "--dry-run=instantiate"], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, code, out.stderr)
            self.assertIn(text, out.stdout + out.stderr)
        status, body, _ = self.admin.http("PUT", PIPE + "?dry_run=maybe", body=good)
        self.assertEqual(status, 400)
        self.assertIn("must be true, false or instantiate", body["error"]["message"])
        self.untouched()


if __name__ == "__main__":
    unittest.main()
