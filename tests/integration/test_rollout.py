"""Live reconfiguration through the real binaries: PUT create, noop, resize,
replace under load with exact accounting, a failing replace that rolls back,
a rollout that times out, 409 while busy, dry runs, bad bodies."""

import json
import os
import signal
import socket
import threading
import time
import unittest

import msgpack
import zmq

from harness import Admin, EngineTest, children_of, cmdline, free_port, read_ndjson, wait_until, generator_spec, zmq_file_spec

ENGINE = """
engine:
  run_dir: {RUN}
  heartbeat_interval_ms: 200
  admin: { http: "127.0.0.1:HTTP" }
groups:
  default:
    pipelines: {}
"""


def zmq_spec(port, out_dir, cores=1, env="v1", path=None):
    return zmq_file_spec(f"tcp://127.0.0.1:{port}", path or f"{out_dir}/ingest-{{core}}-{{generation}}.ndjson",
                         cores=cores, stamp=env, rollout={"step_timeout_secs": 10, "drain_timeout_secs": 10})


def gen_spec(out_dir, cores=1, rate=50):
    return generator_spec(f"{out_dir}/gen-{{core}}-{{generation}}.ndjson", cores=cores, rate=rate)


def accepts(port):
    """Whether something listens on 127.0.0.1:port."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class Load:
    """A producer at a steady rate with sequence numbers, on its own thread."""

    def __init__(self, port, rate=2000, batch=20):
        self.port, self.rate, self.batch = port, rate, batch
        self.sent = 0
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        ctx = zmq.Context()
        sock = ctx.socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 10000)
        sock.connect(f"tcp://127.0.0.1:{self.port}")
        start = time.monotonic()
        while not self.stop_flag.is_set():
            due = int((time.monotonic() - start) * self.rate)
            if self.sent + self.batch > due:
                time.sleep(0.002)  # pacing the producer, not synchronising with the engine
                continue
            sock.send(msgpack.packb([{"seq": self.sent + i} for i in range(self.batch)]))
            self.sent += self.batch
        sock.close()  # linger: everything queued still goes out
        ctx.term()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join()


class Rollouts(EngineTest):
    def setUp(self):
        self.http_port = free_port()
        self.engine = self.start_engine(ENGINE.replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()
        self.out = self.engine.out_dir

    def put(self, name, body, query="", group="default"):
        status, reply, resp = self.admin.http("PUT", f"/api/v1/groups/{group}/pipelines/{name}{query}", body=body,
                                              timeout=60)
        return status, reply, resp

    def pids(self, prefix):
        return {k: v for k, v in self.engine.instances().items() if k.startswith(prefix)}

    def exported(self, pattern="ingest-"):
        rows = []
        for name in sorted(os.listdir(self.out)):
            if name.startswith(pattern):
                rows += read_ndjson(os.path.join(self.out, name))
        return rows

    def test_create_in_an_existing_group_and_404_for_an_unknown_one(self):
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/team-a")[0], 200)
        status, body, _ = self.put("ticks", gen_spec(self.out), group="team-a")
        self.assertEqual(status, 200, body)
        self.assertEqual((body["action"], body["state"], body["target_generation"]), ("create", "succeeded", 1))
        self.assertEqual([s["op"] for s in body["plan"]], ["start", "wait_ready", "switch"])
        self.assertIn("team-a/ticks@1#0", self.engine.instances())
        status, body, _ = self.put("ticks", gen_spec(self.out), group="nope")
        self.assertEqual((status, body["error"]["kind"]), (404, "group_not_found"))
        status, st, _ = self.admin.http("GET", "/api/v1/groups/team-a/pipelines/ticks/status")
        self.assertEqual((st["phase"], st["generation"], st["rollout"]["rollout_id"]),
                         ("running", 1, body_id(self.admin, "team-a", "ticks")))

    def test_noop_changes_no_pid(self):
        self.assertEqual(self.put("p", gen_spec(self.out, cores=2))[0], 200)
        before = self.pids("default/p@")
        # the same spec, keys in another order and defaults spelled out: still a noop
        same = gen_spec(self.out, cores=2)
        same["pipeline"] = dict(reversed(list(same["pipeline"].items())))
        same["pipeline"]["policies"] = {"restart": {"max_restarts": 5}}
        started = time.monotonic()
        status, body, _ = self.put("p", same)
        self.assertEqual((status, body["action"], body["state"]), (200, "noop", "succeeded"))
        self.assertEqual(body["plan"], [])
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual(self.pids("default/p@"), before)

    def test_resize_1_to_2_to_1_keeps_the_kept_core(self):
        self.assertEqual(self.put("p", gen_spec(self.out, cores=1))[0], 200)
        kept = self.pids("default/p@")["default/p@1#0"]
        status, body, _ = self.put("p", gen_spec(self.out, cores=2))
        self.assertEqual((status, body["action"], body["target_generation"]), (200, "resize", 1))
        now = self.pids("default/p@")
        self.assertEqual(now["default/p@1#0"], kept)
        self.assertIn("default/p@1#1", now)
        status, body, _ = self.put("p", gen_spec(self.out, cores=1))
        self.assertEqual((status, body["action"]), (200, "resize"))
        self.assertEqual([s["op"] for s in body["plan"]], ["drain"])
        wait_until(lambda: set(self.pids("default/p@")) == {"default/p@1#0"}, 10, "core 1 drained")
        self.assertEqual(self.pids("default/p@")["default/p@1#0"], kept)

    def test_replace_under_load_exports_every_record_exactly_once(self):
        port = free_port()
        self.assertEqual(self.put("ingest", zmq_spec(port, self.out, cores=2, env="v1"))[0], 200)
        self.engine.wait_log(r"instance connected instance=default/ingest@1#1")
        with Load(port) as load:
            wait_until(lambda: load.sent > 2000, 10, "load flowing")
            #  Several cutovers back to back: each new instance's first credit
            #  can cross the broker's SYNC, which once cost a redelivery.
            for generation in (2, 3, 4, 5):
                status, body, _ = self.put("ingest", zmq_spec(port, self.out, cores=2, env=f"v{generation}"))
                self.assertEqual(status, 200, body)
                self.assertEqual((body["action"], body["target_generation"]), ("replace", generation))
                self.assertEqual([c["state"] for c in body["cores"]], ["retired", "retired"])
            sent_at_cutover = load.sent
            wait_until(lambda: load.sent > sent_at_cutover + 2000, 10, "load after the cutover")
        wait_until(lambda: len(self.exported()) >= load.sent, 20, f"all {load.sent} records exported")
        rows = self.exported()
        seqs = sorted(r["seq"] for r in rows)
        self.assertEqual(seqs, list(range(load.sent)), "every sequence number exactly once")
        last = max(rows, key=lambda r: r["seq"])
        self.assertEqual(last["env"], "v5", "the new config is visible after the cutover")
        gen5 = sum(len(read_ndjson(os.path.join(self.out, f"ingest-{c}-5.ndjson"))) for c in (0, 1))
        self.assertGreater(gen5, 0)
        self.assertEqual(set(self.pids("default/ingest@")), {"default/ingest@5#0", "default/ingest@5#1"})
        self.assertNotIn("redelivering", self.engine.log_text(), "a clean cutover redelivers nothing")

    def test_failing_replace_rolls_back_and_the_old_generation_keeps_serving(self):
        port = free_port()
        self.assertEqual(self.put("ingest", zmq_spec(port, self.out, cores=2))[0], 200)
        self.engine.wait_log(r"instance connected instance=default/ingest@1#1")
        old = self.pids("default/ingest@")
        with Load(port) as load:
            wait_until(lambda: load.sent > 1000, 10, "load flowing")
            bad = zmq_spec(port, self.out, cores=2, env="v2", path="/proc/drover-nope/{core}.ndjson")
            status, body, _ = self.put("ingest", bad)
            self.assertEqual(status, 409, body)
            rollout = body["rollout"]
            self.assertEqual((rollout["state"], rollout["action"]), ("failed", "replace"))
            self.assertIn("cannot open /proc/drover-nope/0.ndjson", rollout["failure_reason"])
            self.assertIn("cannot open", body["error"]["message"])
            sent_after = load.sent
            wait_until(lambda: load.sent > sent_after + 1000, 10, "load after the rollback")
        self.assertEqual(self.pids("default/ingest@"), old, "generation 1 kept every core, same pids")
        wait_until(lambda: len(self.exported()) >= load.sent, 20, "all records exported")
        self.assertEqual(sorted(r["seq"] for r in self.exported()), list(range(load.sent)))
        status, st, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/ingest/status")
        self.assertEqual((st["generation"], st["phase"], st["rollout"]["state"]), (1, "running", "failed"))
        metrics = self.admin.http("GET", "/metrics")[1]
        self.assertIn('drover_rollouts_total{action="create",state="succeeded"} 1', metrics)
        self.assertIn('drover_rollouts_total{action="replace",state="failed"} 1', metrics)
        self.assertIn('drover_rollouts_total{action="replace",state="succeeded"} 0', metrics)

    def test_a_rollout_that_times_out_rolls_back(self):
        self.assertEqual(self.put("p", gen_spec(self.out))[0], 200)
        old = self.pids("default/p@")
        fifo = os.path.join(self.out, "fifo")
        os.mkfifo(fifo)  # opening it for writing blocks: the instance never becomes ready
        slow = gen_spec(self.out, rate=51)
        slow["pipeline"]["nodes"]["out"]["config"]["path"] = fifo
        slow["step_timeout_secs"] = 1
        started = time.monotonic()
        status, body, _ = self.put("p", slow)
        self.assertEqual(status, 409, body)
        self.assertIn("not ready within 1 s", body["rollout"]["failure_reason"])
        self.assertLess(time.monotonic() - started, 8)
        wait_until(lambda: self.pids("default/p@") == old, 10, "only generation 1 left")

    def test_busy_pipeline_409_wait_timeout_504_and_no_wait_202(self):
        self.assertEqual(self.put("p", gen_spec(self.out))[0], 200)
        fifo = os.path.join(self.out, "fifo")
        os.mkfifo(fifo)
        slow = gen_spec(self.out, rate=51)
        slow["pipeline"]["nodes"]["out"]["config"]["path"] = fifo
        slow["step_timeout_secs"] = 3
        status, body, resp = self.put("p", slow, query="?wait=false")
        self.assertEqual((status, body["state"]), (202, "running"))
        location = resp.getheader("Location")
        self.assertEqual(location, f"/api/v1/groups/default/pipelines/p/rollouts/{body['rollout_id']}")
        status, busy, _ = self.put("p", gen_spec(self.out, rate=52))
        self.assertEqual((status, busy["error"]["kind"]), (409, "conflict"))
        self.assertIn(body["rollout_id"], busy["error"]["message"])
        # Every change is admitted by the same check: shutdown, DELETE and
        # rollback wait their turn too, naming what is in the way.
        base = "/api/v1/groups/default/pipelines/p"
        for method, path in (("POST", base + "/shutdown"), ("DELETE", base), ("POST", base + "/rollback")):
            status, other, _ = self.admin.http(method, path)
            self.assertEqual((status, other["error"]["kind"]), (409, "conflict"), (method, path, other))
            self.assertIn(body["rollout_id"], other["error"]["message"])
        status, latest, _ = self.admin.http("GET", location)
        self.assertEqual((status, latest["state"]), (200, "running"))
        wait_until(lambda: self.admin.http("GET", location)[1]["state"] == "failed", 15, "rollout ends failed")
        # a waited PUT that outlives its timeout gets 504 and the latest status
        slow["step_timeout_secs"] = 5
        status, body, _ = self.put("p", slow, query="?timeout_secs=1")
        self.assertEqual((status, body["state"]), (504, "running"))
        self.assertEqual(self.admin.zmq("GET", "/api/v1/groups/default/pipelines/p/rollouts")[1][0]["rollout_id"],
                         body["rollout_id"])

    def test_a_waiting_put_blocks_neither_the_loop_nor_other_requests(self):
        self.assertEqual(self.put("p", gen_spec(self.out))[0], 200)
        fifo = os.path.join(self.out, "fifo")
        os.mkfifo(fifo)  # the new generation blocks opening it: the rollout waits for its step timeout
        slow = gen_spec(self.out, rate=51)
        slow["pipeline"]["nodes"]["out"]["config"]["path"] = fifo
        slow["step_timeout_secs"] = 30
        waited = {}
        waiting = threading.Thread(target=lambda: waited.update(zip(("status", "body"), self.put("p", slow)[:2])))
        waiting.start()
        running = lambda: (lambda h: h and h[0]["state"] == "running" and h[0])(  # noqa: E731
            self.admin.zmq("GET", "/api/v1/groups/default/pipelines/p/rollouts")[1])
        rollout = wait_until(running, 10, "the slow rollout under way")
        # While that PUT waits (for up to 30 s), everything else is answered,
        # over both transports, and other pipelines can be changed.
        for _ in range(20):
            self.assertEqual(self.admin.http("GET", "/status", timeout=2)[0], 200)
            self.assertEqual(self.admin.zmq("GET", "/readyz", timeout=2)[0], 200)
        self.assertEqual(self.put("other", gen_spec(self.out))[0], 200)
        self.assertTrue(waiting.is_alive(), "the waiting PUT is still waiting")
        self.assertEqual(self.admin.http("GET", f"/api/v1/groups/default/pipelines/p/rollouts/{rollout['rollout_id']}")[1]
                         ["state"], "running")
        # End it: opening the fifo for reading lets the instance become ready.
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.addCleanup(os.close, reader)
        waiting.join(timeout=30)
        self.assertEqual((waited["status"], waited["body"]["state"]), (200, "succeeded"))

    def test_sigterm_during_a_rollout_ends_it_where_it_stands_and_drains_what_runs(self):
        # droverd's stop is one shutdown per pipeline, run by the executor that runs rollouts: a rollout
        # under way ends (no rollback, nothing new started), and every instance of either generation drains.
        import signal
        self.assertEqual(self.put("p", gen_spec(self.out))[0], 200)
        fifo = os.path.join(self.out, "fifo")
        os.mkfifo(fifo)  # the new generation blocks opening it: the rollout waits
        slow = gen_spec(self.out, rate=51)
        slow["pipeline"]["nodes"]["out"]["config"]["path"] = fifo
        slow["step_timeout_secs"] = 60
        status, body, _ = self.put("p", slow, query="?wait=false")
        self.assertEqual(status, 202, body)
        self.engine.wait_log(r"instance started instance=default/p@2#0")
        self.engine.signal(signal.SIGTERM)
        self.assertEqual(self.engine.wait_exit(30), 0)
        log = self.engine.log_text()
        self.assertRegex(log, rf'rollout failed pipeline=default:p id={body["rollout_id"]} action=replace '
                              r'reason="droverd is stopping"')
        self.assertRegex(log, r"pipeline shutdown started pipeline=default:p id=shutdown-\d+ forget=no")
        self.assertRegex(  # a fast drain may exit (code 0) before droverd logs its DRAINED
            log, r"instance (drained instance=default/p@1#0|exited instance=default/p@1#0 exit=0)")
        after = log[log.index("shutdown started signal="):]
        self.assertNotIn("instance started", after, "nothing starts once droverd stops")
        self.assertNotIn("rolling back", after)

    def test_dry_run_changes_nothing(self):
        self.assertEqual(self.put("p", gen_spec(self.out, cores=1))[0], 200)
        before = self.pids("default/p@")
        history = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/rollouts")[1]
        status, body, _ = self.put("p", gen_spec(self.out, cores=2, rate=99), query="?dry_run=true")
        self.assertEqual((status, body["dry_run"], body["action"], body["state"]), (200, True, "replace", "pending"))
        self.assertEqual([(s["op"], s["core"], s["generation"]) for s in body["plan"]],
                         [("start", 1, 2), ("wait_ready", 1, 2), ("switch", 1, 2),
                          ("start", 0, 2), ("wait_ready", 0, 2), ("switch", 0, 2), ("drain", 0, 1)])
        self.assertEqual(self.pids("default/p@"), before)
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/p/rollouts")[1], history)
        status, st, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")
        self.assertEqual(st["generation"], 1)
        # over zmq too, for a pipeline that does not exist: nothing is created
        status, body = self.admin.zmq("PUT", "/api/v1/groups/default/pipelines/q", query={"dry_run": "true"},
                                      body=gen_spec(self.out))
        self.assertEqual((status, body["action"]), (200, "create"))
        self.assertEqual(self.admin.zmq("GET", "/api/v1/groups/default/pipelines/q")[0], 404)

    def test_invalid_spec_422_with_every_problem_and_malformed_body_400(self):
        bad = gen_spec(self.out)
        bad["pipeline"]["nodes"]["g"]["type"] = "receiver:pigeon"
        bad["pipeline"]["nodes"]["out"]["config"]["speed"] = 1
        status, body, _ = self.put("p", bad)
        self.assertEqual((status, body["error"]["kind"]), (422, "invalid_request"))
        paths = {d["path"] for d in body["error"]["details"]}
        self.assertIn("nodes.g.type", paths)
        self.assertIn("nodes.out.config.speed", paths)
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/p")[0], 404, "nothing half-applied")
        self.assertEqual(self.put("p", {"spec": {}})[0], 400)
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", raw_body="{broken")
        self.assertEqual(status, 400)
        self.assertEqual(self.put("p", gen_spec(self.out), query="?wait=maybe")[0], 400)
        port = free_port()
        self.assertEqual(self.put("a", zmq_spec(port, self.out))[0], 200)
        status, body, _ = self.put("b", zmq_spec(port, self.out))
        self.assertEqual(status, 422)
        self.assertIn("already bound by pipeline default:a", body["error"]["details"][0]["message"])

    def test_shutdown_succeeds_processes_gone_then_create_again_and_delete(self):
        port = free_port()
        self.assertEqual(self.put("ingest", zmq_spec(port, self.out, cores=2))[0], 200)
        self.engine.wait_log(r"instance connected instance=default/ingest@1#1")
        with Load(port, rate=1000) as load:
            wait_until(lambda: load.sent > 500, 10, "load flowing")
            status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/ingest/shutdown")
        self.assertEqual((status, body["state"]), (200, "succeeded"), body)
        self.assertEqual({c["state"] for c in body["cores"]}, {"exited"})
        # Planned like any change and run by the same executor: close the
        # front doors, retire both instances at once, wait for each.
        self.assertEqual([(s["op"], s["core"]) for s in body["plan"]],
                         [("close", -1), ("retire", 0), ("retire", 1), ("wait_gone", 0), ("wait_gone", 1)])
        self.assertEqual(body["step"], 5)
        self.assertEqual(self.pids("default/ingest@"), {}, "the processes are gone")
        accepted = sum(int(n) for n in __import__("re").findall(
            r"front door closed pipeline=default:ingest node=in accepted_batches=(\d+)", self.engine.log_text()))
        self.assertEqual(len(self.exported()), accepted * 20, "every accepted record exported")
        self.assertEqual(len({r["seq"] for r in self.exported()}), accepted * 20, "none twice")
        status, st, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/ingest/status")
        self.assertEqual((st["phase"], st["shutdown"]["shutdown_id"]), ("stopped", body["shutdown_id"]))
        status, again, _ = self.admin.http("GET", f"/api/v1/groups/default/pipelines/ingest/shutdowns/{body['shutdown_id']}")
        self.assertEqual((status, again["state"]), (200, "succeeded"))
        self.assertEqual(self.admin.http("GET", "/readyz")[0], 200, "a stopped pipeline is not expected to run")
        # A broker that restarts is told only of pipelines that run: the
        # stopped one's endpoint stays closed. (A pipeline created after the
        # restart is told later on the same socket: once its endpoint
        # accepts, the broker has read every earlier order.)
        broker = next(c for c in children_of(self.engine.pid) if cmdline(c) == "drover-broker")
        os.kill(broker, signal.SIGKILL)
        self.engine.wait_log(r"broker connected pid=", count=2)
        later = free_port()
        self.assertEqual(self.put("later", zmq_spec(later, self.out))[0], 200)
        wait_until(lambda: accepts(later), 10, "the later pipeline's endpoint open")
        self.assertFalse(accepts(port), "a stopped pipeline's endpoint stays closed after a broker restart")
        self.assertEqual(self.admin.http("DELETE", "/api/v1/groups/default/pipelines/later")[0], 200)
        # created again with PUT: a new generation
        status, body, _ = self.put("ingest", zmq_spec(port, self.out, cores=1))
        self.assertEqual((status, body["action"], body["target_generation"]), (200, "create", 2))
        self.assertIn("default/ingest@2#0", self.pids("default/ingest@"))
        # DELETE: shut down and forgotten
        status, body, _ = self.admin.http("DELETE", "/api/v1/groups/default/pipelines/ingest")
        self.assertEqual((status, body["state"]), (200, "succeeded"))
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/ingest")[0], 404)
        self.assertEqual(self.pids("default/ingest@"), {})
        self.assertEqual(self.admin.http("POST", "/api/v1/groups/default/pipelines/ingest/shutdown")[0], 404)

    def test_history_keeps_the_32_most_recent_rollouts(self):
        for i in range(40):  # noops: each is a rollout, recorded at once
            self.assertEqual(self.admin.zmq("PUT", "/api/v1/groups/default/pipelines/p", body=gen_spec(self.out))[0], 200)
        history = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/rollouts")[1]
        self.assertEqual(len(history), 32)
        self.assertEqual([r["rollout_id"] for r in history[:2]], ["rollout-40", "rollout-39"], "newest first")
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/p/rollouts/rollout-8")[0], 404)
        status, old, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/rollouts/rollout-9")
        self.assertEqual((status, old["state"], old["action"]), (200, "succeeded", "noop"))
        # The newest 8 are kept whole; older ones as a summary (docs/operations.md, RolloutStatus).
        self.assertNotIn("plan", old)
        self.assertIn("plan", history[7])
        self.assertEqual([r["rollout_id"] for r in history], [f"rollout-{n}" for n in range(40, 8, -1)])

    def test_rollback_restores_the_previous_spec_as_a_new_generation(self):
        self.assertEqual(self.put("p", gen_spec(self.out, rate=10))[0], 200)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/p/rollback")
        self.assertEqual((status, body["error"]["kind"]), (409, "conflict"))
        self.assertEqual(self.put("p", gen_spec(self.out, rate=20))[0], 200)
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/p/rollback")
        self.assertEqual((status, body["action"], body["target_generation"]), (200, "replace", 3))
        status, got, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p")
        self.assertEqual(got["spec"]["nodes"]["g"]["config"]["rate"], 10)
        self.assertEqual(got["status"]["generation"], 3)
        history = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/rollouts")[1]
        self.assertEqual([r["action"] for r in history], ["replace", "replace", "create"])

    def test_a_failed_rollback_ends_rollback_failed_and_status_shows_the_mix(self):
        def spec(path, rate):
            body = gen_spec(self.out, cores=2, rate=rate)
            body["pipeline"]["nodes"]["out"]["config"]["path"] = path
            return body

        self.assertEqual(self.put("p", spec(self.out + "/d1/{core}.ndjson", 10))[0], 200)
        # Generation 1 runs; from now on it could not start again: its directory
        # becomes a file.
        import shutil
        shutil.rmtree(os.path.join(self.out, "d1"))
        open(os.path.join(self.out, "d1"), "w").close()
        # Generation 2 works on core 0 but not on core 1.
        open(os.path.join(self.out, "d2-1"), "w").close()
        status, body, _ = self.put("p", spec(self.out + "/d2-{core}/x.ndjson", 20))
        self.assertEqual(status, 409, body)
        rollout = body["rollout"]
        self.assertEqual(rollout["state"], "rollback_failed")
        self.assertIn("core 1: generation 2 instance exited before ready", rollout["failure_reason"])
        self.assertIn("rollback failed: core 0: generation 1", rollout["failure_reason"])
        status, st, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")
        serving = sorted((i["core"], i["generation"], i["state"]) for i in st["instances"] if i["state"] == "ready")
        self.assertEqual(serving, [(0, 2, "ready"), (1, 1, "ready")], "the mix, as it is")
        self.assertEqual((st["rollout"]["state"], st["phase"]), ("rollback_failed", "failed"))
        self.assertEqual(set(self.pids("default/p@")), {"default/p@2#0", "default/p@1#1"})

    def test_droverctl_apply_rollout_shutdown_delete(self):
        import subprocess, harness  # noqa: E401
        ctl = [os.path.join(harness.BIN, "droverctl"), "-e", self.admin.endpoint]

        def run(*args, code=0):
            proc = subprocess.run(ctl + list(args), capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
            return proc.stdout + proc.stderr

        spec_path = os.path.join(self.out, "p.yaml")

        def write(rate, path=None):
            with open(spec_path, "w") as f:
                f.write("cores: { count: 2 }\nnodes:\n"
                        f"  g: {{ type: receiver:generator, config: {{ rate: {rate} }}, to: [out] }}\n"
                        f"  out: {{ type: exporter:file, config: {{ path: \"{path or self.out + '/p-{core}.ndjson'}\" }} }}\n")

        write(5)
        out = run("apply", "-f", spec_path, "default/p")
        self.assertTrue("create of default/p to generation 1, 6 steps" in out and "succeeded" in out, out)
        write(6)
        out = run("apply", "-f", spec_path, "default/p", "--dry-run")
        self.assertTrue("replace of default/p to generation 2, 8 steps" in out and "dry run: nothing changed" in out, out)
        self.assertIn("default/p@1#0", self.engine.instances())
        run("apply", "-f", spec_path, "default/p")
        write(7, "/proc/drover-nope/x.ndjson")
        out = run("apply", "-f", spec_path, "default/p", code=1)
        self.assertIn("failed: core 0: generation 3 instance exited before ready", out)
        out = run("rollout", "history", "default/p")
        lines = out.splitlines()[1:]
        self.assertEqual([line.split()[1] for line in lines], ["replace", "replace", "create"])
        self.assertTrue(" 2 -> 3 " in lines[0] and " failed " in lines[0], lines[0])
        self.assertIn("failed", run("rollout", "status", "default/p"))
        self.assertIn("succeeded", run("rollout", "undo", "default/p"))
        status, got, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p")
        self.assertEqual(got["spec"]["nodes"]["g"]["config"]["rate"], 5)
        history = json.loads(run("-o", "json", "rollout", "history", "default/p"))
        self.assertEqual([(r["state"], r["cause"]) for r in history[:2]], [("succeeded", "rollback"), ("failed", "apply")])
        write(5)  # the undo says what it was; a no-op apply is no revision
        self.assertIn("noop", run("apply", "-f", spec_path, "default/p"))
        out = run("rollout", "history", "default/p")
        self.assertEqual([ln.split()[1:3] for ln in out.splitlines()[1:3]], [["replace", "(rollback)"], ["replace", "2"]])
        self.assertIn("(1 no-op apply not shown: nothing changed; --all shows them)", out)
        self.assertIn("stopped", run("shutdown", "default/p"))
        self.assertEqual([k for k in self.engine.instances() if k.startswith("default/p@")], [])
        self.assertIn("stopped and deleted", run("delete", "default/p"))
        self.assertIn("pipeline_not_found", run("describe", "default/p", code=1))
        for command in ("apply", "rollout", "shutdown"):
            self.assertIn(f"usage: droverctl [options] {command}", run(command, "--help"))


def body_id(admin, group, name):
    return admin.http("GET", f"/api/v1/groups/{group}/pipelines/{name}/rollouts")[1][0]["rollout_id"]


if __name__ == "__main__":
    unittest.main(verbosity=2)
