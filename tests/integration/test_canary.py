"""Canary rollouts and steering a rollout under way, through the real
binaries: a canary that raises the error ratio rolls back by itself while the
old generation keeps serving; a healthy one promotes after its hold (a
one-core pipeline by overlap); auto_promote false waits for promote; pause
holds the mixed state until resume; abort rolls back; what a rollout's state
does not allow is refused with the reason. Every test sends sequenced load
and checks each record is exported exactly once."""

import json
import os
import subprocess
import time
import unittest

from harness import BIN, SLOW, Admin, EngineTest, free_port, read_ndjson, wait_until

# Holds during which the test watches both generations take traffic: long
# enough for that on a sanitized build too (make test-asan).
HOLD = int(3 * SLOW)
from test_rollout import Load

ENGINE = """
engine:
  run_dir: {RUN}
  heartbeat_interval_ms: 100
  admin: { http: "127.0.0.1:HTTP" }
groups:
  default:
    pipelines: {}
"""

PIPE = "/api/v1/groups/default/pipelines/p"


def spec(port, out, cores=1, version=1, canary=None, failing=False):
    """zmq in -> lua (stamps the version; failing: raises on every record,
    which on_error pass lets through, counted in errors) -> file."""
    script = ("function process(r) error('boom') end" if failing
              else f"function process(r) r.v = {version}; return r end")
    rollout = {"step_timeout_secs": 10, "drain_timeout_secs": 10}
    if canary is not None:
        rollout["canary"] = canary
    return {"pipeline": {
        "cores": {"count": cores},
        "nodes": {
            "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["lua"]},
            "lua": {"type": "processor:lua", "config": {"script": script, "on_error": "pass"}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{out}/c-{{core}}-{{generation}}.ndjson"}},
        },
        "policies": {"rollout": rollout},
    }}


def wall(stamp):
    """An RFC 3339 time as seconds since the epoch."""
    from datetime import datetime
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class Canary(EngineTest):
    def setUp(self):
        self.http_port = free_port()
        self.engine = self.start_engine(ENGINE.replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()
        self.out = self.engine.out_dir
        self.port = free_port()

    def put(self, body, wait=True):
        status, reply, _ = self.admin.http("PUT", PIPE + ("" if wait else "?wait=false"), body=body, timeout=60)
        return status, reply

    def rollout(self, rid):
        status, body, _ = self.admin.http("GET", f"{PIPE}/rollouts/{rid}")
        self.assertEqual(status, 200, body)
        return body

    def control(self, rid, what, transport="http"):
        if transport == "zmq":
            return self.admin.zmq("POST", f"{PIPE}/rollouts/{rid}/{what}")
        status, body, _ = self.admin.http("POST", f"{PIPE}/rollouts/{rid}/{what}")
        return status, body

    def ctl(self, *args):
        return subprocess.run([f"{BIN}/droverctl", "-e", self.admin.endpoint, *args], capture_output=True,
                              text=True, timeout=30)

    def instances(self):
        return self.admin.http("GET", PIPE + "/status")[1]["instances"]

    def file_count(self, core, generation):
        return len(read_ndjson(os.path.join(self.out, f"c-{core}-{generation}.ndjson")))

    def exported(self):
        rows = []
        for name in sorted(os.listdir(self.out)):
            if name.startswith("c-"):
                rows += read_ndjson(os.path.join(self.out, name))
        return rows

    def create(self, cores):
        status, body = self.put(spec(self.port, self.out, cores=cores))
        self.assertEqual(status, 200, body)
        self.engine.wait_log(rf"instance connected instance=default/p@1#{cores - 1}")

    def grows(self, core, generation, by=50):
        """Waits until generation's file on core gets `by` more records."""
        before = self.file_count(core, generation)
        wait_until(lambda: self.file_count(core, generation) >= before + by, 10,
                   f"generation {generation} on core {core} to keep exporting")

    def every_record_once(self, load):
        wait_until(lambda: len(self.exported()) >= load.sent, 20, f"all {load.sent} records exported")
        self.assertEqual(sorted(r["seq"] for r in self.exported()), list(range(load.sent)),
                         "every sequence number exactly once")

    def test_a_canary_that_raises_the_error_ratio_rolls_back_by_itself(self):
        self.create(2)
        old = self.engine.instances()
        with Load(self.port) as load:
            wait_until(lambda: load.sent > 1000, 10, "load flowing")
            canary = {"cores": 1, "hold_secs": HOLD, "max_error_ratio": 0.01}
            status, body = self.put(spec(self.port, self.out, cores=2, version=2, canary=canary, failing=True),
                                    wait=False)
            self.assertEqual(status, 202, body)
            rid = body["rollout_id"]
            self.assertEqual([s["op"] for s in body["plan"]][:5], ["start", "wait_ready", "switch", "drain", "hold"])
            held = wait_until(lambda: (lambda r: r if r["state"] == "paused" else None)(self.rollout(rid)), 10,
                              "the canary's hold")
            self.assertEqual(held["canary"]["verdict"], "pending")
            self.assertIsNotNone(held["canary"]["until"])
            # During the hold core 0 is generation 2's, core 1 still generation 1's, same process.
            self.grows(1, 1)
            self.grows(0, 2)
            done = wait_until(lambda: (lambda r: r if r["state"] in ("failed", "succeeded") else None)(
                self.rollout(rid)), 20, "the verdict")
            self.assertEqual(done["state"], "failed", done)
            self.assertIn("canary failed: error ratio", done["failure_reason"])
            self.assertEqual(done["canary"]["verdict"], "fail")
            self.assertGreater(done["canary"]["error_ratio_new"], 0.5)
            self.assertEqual(done["canary"]["error_ratio_old"], 0)
            self.assertIn("canary", [h["action"] for h in done["history"]])
            self.assertEqual(old["default/p@1#1"], self.engine.instances()["default/p@1#1"],
                             "the old generation's other core never stopped")
            sent = load.sent
            wait_until(lambda: load.sent > sent + 500, 10, "load after the rollback")
            self.grows(0, 1)  # core 0 is generation 1's again
        self.assertEqual(sorted(self.engine.instances()), ["default/p@1#0", "default/p@1#1"])
        st = self.admin.http("GET", PIPE + "/status")[1]
        self.assertEqual((st["generation"], st["phase"]), (1, "running"))
        self.every_record_once(load)

    def test_a_healthy_one_core_canary_overlaps_then_promotes_after_its_hold(self):
        self.create(1)
        with Load(self.port) as load:
            wait_until(lambda: load.sent > 1000, 10, "load flowing")
            canary = {"cores": 1, "hold_secs": HOLD}
            status, body = self.put(spec(self.port, self.out, version=2, canary=canary), wait=False)
            self.assertEqual(status, 202, body)
            rid = body["rollout_id"]
            self.assertEqual([s["op"] for s in body["plan"]], ["start", "wait_ready", "switch", "hold", "drain"])
            held = wait_until(lambda: (lambda r: r if r["state"] == "paused" else None)(self.rollout(rid)), 10,
                              "the canary's hold")
            # One core: generation 2 takes a share beside generation 1 on it.
            gens = {i["generation"]: i["state"] for i in self.instances()}
            self.assertEqual(gens, {1: "ready", 2: "ready"})
            self.grows(0, 1)
            self.grows(0, 2)
            done = wait_until(lambda: (lambda r: r if r["state"] in ("failed", "succeeded") else None)(
                self.rollout(rid)), 20, "the promotion")
            self.assertEqual(done["state"], "succeeded", done)
            self.assertEqual(done["canary"]["verdict"], "pass")
            self.assertGreater(done["canary"]["records_new"], 0)
            self.assertGreaterEqual(wall(done["updated_at"]), wall(held["canary"]["until"]) - 0.01,
                                    "promoted no sooner than the hold's end")
        self.assertEqual(sorted(self.engine.instances()), ["default/p@2#0"])
        self.every_record_once(load)

    def test_a_canary_generation_is_seen_and_tapped_while_it_holds(self):
        # The canary brings a node the running generation has not: the
        # status shows its instance's nodes, GET the pipeline its spec, and
        # droverctl taps it (--generation confines a tap to one).
        self.create(2)
        with Load(self.port) as load:
            wait_until(lambda: load.sent > 500, 10, "load flowing")
            body = spec(self.port, self.out, cores=2, version=2, canary={"cores": 1, "hold_secs": 600})
            nodes = body["pipeline"]["nodes"]
            nodes["lua"]["to"] = ["rename"]
            nodes["rename"] = {"type": "processor:transform", "config": {"rename": {"v": "version"}}, "to": ["out"]}
            status, reply = self.put(body, wait=False)
            rid = reply["rollout_id"]
            wait_until(lambda: self.rollout(rid)["state"] == "paused", 10, "the canary's hold")
            canary = next(i for i in self.instances() if i["generation"] == 2)
            wait_until(lambda: "rename" in next(i for i in self.instances() if i["generation"] == 2)["nodes"], 10,
                       "the canary's nodes in the status")
            got = self.admin.http("GET", PIPE)[1]
            self.assertNotIn("rename", got["spec"]["nodes"])
            self.assertIn("rename", got["rollout_spec"]["nodes"])
            tapped = self.ctl("tap", "default/p", "--node", "rename", "--limit", "3", "--for", "20")
            self.assertEqual(tapped.returncode, 0, tapped.stderr)
            records = [json.loads(line) for line in tapped.stdout.splitlines()]
            self.assertEqual(len(records), 3, tapped.stdout)
            self.assertEqual({(r["generation"], r["core"], r["node"]) for r in records}, {(2, canary["core"], "rename")})
            self.assertEqual({r["record"]["version"] for r in records}, {2})
            only = self.ctl("tap", "default/p", "--generation", "1", "--limit", "2", "--for", "20")
            self.assertEqual(only.returncode, 0, only.stderr)
            self.assertEqual({json.loads(line)["generation"] for line in only.stdout.splitlines()}, {1})
            wrong = self.ctl("tap", "default/p", "--node", "rename", "--generation", "1", "--for", "2")
            self.assertEqual(wrong.returncode, 1)
            self.assertIn('"rename" is not a node of default:p', wrong.stderr)
            none = self.ctl("tap", "default/p", "--generation", "9", "--for", "2")
            self.assertIn("no instance of generation 9 runs (generations: 1, 2)", none.stderr)
            self.assertEqual(self.control(rid, "abort")[0], 200)

    def test_a_canary_that_crashes_fails_its_hold_at_once(self):
        self.create(2)
        canary = {"cores": 1, "hold_secs": 600}
        status, body = self.put(spec(self.port, self.out, cores=2, version=2, canary=canary), wait=False)
        rid = body["rollout_id"]
        wait_until(lambda: self.rollout(rid)["state"] == "paused", 10, "the canary's hold")
        os.kill(self.engine.instances()["default/p@2#0"], 9)
        done = wait_until(lambda: (lambda r: r if r["state"] == "failed" else None)(self.rollout(rid)), 20,
                          "the verdict, long before the hold's end")
        self.assertIn("canary failed: generation 2 crashed 1 time(s) in its hold, generation 1 0",
                      done["failure_reason"])
        self.assertEqual(done["canary"]["verdict"], "fail")
        wait_until(lambda: sorted(self.engine.instances()) == ["default/p@1#0", "default/p@1#1"], 10,
                   "generation 1 on both cores")

    def test_without_auto_promote_a_passed_canary_waits_for_promote(self):
        self.create(2)
        with Load(self.port) as load:
            wait_until(lambda: load.sent > 500, 10, "load flowing")
            canary = {"cores": 1, "hold_secs": 1, "auto_promote": False}
            status, body = self.put(spec(self.port, self.out, cores=2, version=2, canary=canary), wait=False)
            rid = body["rollout_id"]
            passed = wait_until(lambda: (lambda r: r if r["canary"]["verdict"] == "pass" else None)(
                self.rollout(rid)), 10, "the verdict")
            self.assertEqual(passed["state"], "paused")
            self.grows(1, 1)  # still waiting, both generations serving
            self.assertEqual(self.rollout(rid)["state"], "paused")
            out = self.ctl("rollout", "status", "default/p")
            self.assertIn("verdict pass", out.stdout)
            out = self.ctl("rollout", "promote", "default/p")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn(f"{rid}: promote asked", out.stdout)
            done = wait_until(lambda: (lambda r: r if r["state"] == "succeeded" else None)(self.rollout(rid)), 20,
                              "the rest of the cores")
            self.assertEqual([h["action"] for h in done["history"]], ["canary", "promote"])
        self.every_record_once(load)

    def test_pause_holds_the_mixed_state_until_resume(self):
        self.create(2)
        with Load(self.port) as load:
            wait_until(lambda: load.sent > 500, 10, "load flowing")
            # A plain replace of two cores is over in milliseconds, sooner
            # than droverctl starts: the pause is asked during a canary's
            # hold instead, and takes effect once the hold has passed.
            canary = {"cores": 1, "hold_secs": HOLD}
            status, body = self.put(spec(self.port, self.out, cores=2, version=2, canary=canary), wait=False)
            rid = body["rollout_id"]
            wait_until(lambda: self.rollout(rid)["state"] == "paused", 10, "the canary's hold")
            self.assertEqual(self.rollout(rid)["paused_by"], "canary")  # its hold: not an operator's pause
            out = self.ctl("rollout", "pause", "default/p")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("it is holding (canary) until ", out.stdout)
            self.assertIn("promote ends the hold now, abort rolls back", out.stdout)
            paused = wait_until(lambda: (lambda r: r if r["state"] == "paused" and r["canary"]["verdict"] == "pass"
                                         else None)(self.rollout(rid)), HOLD + 10, "the pause after the hold")
            self.assertLess(paused["step"], len(paused["plan"]))
            # Both generations serve while it is paused, and it stays paused.
            self.assertEqual({i["generation"] for i in self.instances() if i["state"] == "ready"}, {1, 2})
            core_of = {g: [i["core"] for i in self.instances() if i["generation"] == g] for g in (1, 2)}
            self.grows(core_of[1][0], 1)
            self.grows(core_of[2][0], 2)
            again = self.rollout(rid)
            self.assertEqual((again["state"], again["step"], again["paused_by"]), ("paused", paused["step"], "operator"))
            # A second PUT meanwhile is refused: the paused rollout is still the pipeline's.
            self.assertEqual(self.put(spec(self.port, self.out, cores=2, version=3))[0], 409)
            status, body = self.control(rid, "resume", transport="zmq")
            self.assertEqual(status, 200, body)
            done = wait_until(lambda: (lambda r: r if r["state"] == "succeeded" else None)(self.rollout(rid)), 20,
                              "the rollout to finish")
            actions = [h["action"] for h in done["history"]]
            self.assertEqual([a for a in actions if a in ("pause", "resume")], ["pause", "resume"], actions)
        self.assertEqual(sorted(self.engine.instances()), ["default/p@2#0", "default/p@2#1"])
        self.every_record_once(load)

    def test_abort_rolls_back_and_refusals_say_why(self):
        self.create(2)
        old = self.engine.instances()
        with Load(self.port) as load:
            wait_until(lambda: load.sent > 500, 10, "load flowing")
            canary = {"cores": 1, "hold_secs": 600}
            status, body = self.put(spec(self.port, self.out, cores=2, version=2, canary=canary), wait=False)
            rid = body["rollout_id"]
            wait_until(lambda: self.rollout(rid)["state"] == "paused", 10, "the canary's hold")
            status, body = self.control(rid, "abort")
            self.assertEqual(status, 200, body)
            done = wait_until(lambda: (lambda r: r if r["state"] == "failed" else None)(self.rollout(rid)), 20,
                              "the rollback")
            self.assertEqual((done["failure_reason"], done["aborted"]), ("aborted by the operator", True))
            progressing = next(c for c in self.admin.http("GET", f"{PIPE}/status")[1]["conditions"]
                               if c["type"] == "progressing")
            self.assertEqual(progressing["reason"], "RolloutAborted")  # an operator's choice, not a failure
            self.assertEqual([h["action"] for h in done["history"]], ["abort"])
            self.assertEqual(old["default/p@1#1"], self.engine.instances()["default/p@1#1"])
            sent = load.sent
            wait_until(lambda: load.sent > sent + 500, 10, "load after the rollback")
        self.assertEqual(sorted(self.engine.instances()), ["default/p@1#0", "default/p@1#1"])
        self.every_record_once(load)
        # What the state does not allow.
        status, body = self.control(rid, "resume")
        self.assertEqual(status, 409)
        self.assertIn("has ended (failed)", body["error"]["message"])
        status, body = self.control("current", "pause")
        self.assertEqual((status, body["error"]["kind"]), (404, "rollout_not_found"))
        self.assertIn("no rollout under way", body["error"]["message"])
        status, body = self.control("rollout-999", "abort", transport="zmq")
        self.assertEqual(status, 404)
        status, body = self.put(spec(self.port, self.out, cores=2, version=3), wait=False)
        rid = body["rollout_id"]
        status, body = self.control(rid, "promote")
        if status != 409:  # it may have ended already: then it is "has ended"
            self.fail(body)
        self.assertRegex(body["error"]["message"], "no canary waiting to be promoted|has ended")
        out = self.ctl("rollout", "frobnicate", "default/p")
        self.assertEqual(out.returncode, 2)
        self.assertIn("pause, resume, promote or abort", out.stderr)


class RestartDuringPause(EngineTest):
    """A paused rollout was never applied: a droverd restarted from its state
    file brings back the last applied generation (a rollback) and says so."""

    def test_a_restart_during_a_pause_rolls_back_and_says_so(self):
        self.http_port = free_port()
        config = ENGINE.replace("HTTP", str(self.http_port)).replace(
            "  heartbeat_interval_ms: 100\n", "  heartbeat_interval_ms: 100\n  state_file: {OUT}/../state.json\n")
        engine = self.start_engine(config)
        admin = Admin(engine, self.http_port)
        admin.wait_ready()
        port, out = free_port(), engine.out_dir
        self.assertEqual(admin.http("PUT", PIPE, body=spec(port, out, cores=2))[0], 200)
        status, body, _ = admin.http("PUT", PIPE + "?wait=false", body=spec(port, out, cores=2, version=2,
                                                                           canary={"hold_secs": 600}))
        rid = body["rollout_id"]
        wait_until(lambda: admin.http("GET", f"{PIPE}/rollouts/{rid}")[1]["state"] == "paused", 10, "the hold")
        state_path = os.path.join(engine.dir, "state.json")

        def noted():
            with open(state_path) as f:
                entry = json.load(f)["groups"]["default"]["pipelines"]["p"]
            return entry.get("rollout", {}).get("state") == "paused" and entry["generation"] == 1

        wait_until(noted, 10, "the state file to note the paused rollout")
        engine.signal(15)
        self.assertEqual(engine.wait_exit(30), 0, "SIGTERM drains everything, paused or not")
        engine.log.close()
        engine.start()
        admin.wait_ready()
        wait_until(lambda: set(engine.instances()) == {"default/p@1#0", "default/p@1#1"}, 10,
                   "generation 1 restored on both cores")
        status, st, _ = admin.http("GET", PIPE + "/status")
        self.assertEqual((st["generation"], st["phase"]), (1, "running"))
        log = engine.log_text()
        self.assertIn(f"rollout {rid} of default:p (to generation 2) was paused at step 5 (hold)", log)
        self.assertIn("it is rolled back: generation 1 is restored", log)


if __name__ == "__main__":
    unittest.main()
