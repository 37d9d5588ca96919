"""SIGHUP reload and the state file, through the real binaries."""

import json
import os
import re
import signal
import time
import unittest

import msgpack

from harness import Admin, Engine, EngineTest, free_port, read_ndjson, wait_until

CONFIG = """
engine:
  run_dir: {RUN}
  heartbeat_interval_ms: 200
  admin: { http: "127.0.0.1:HTTP" }
STATE
groups:
  default:
    pipelines:
PIPELINES
"""


def pipeline(name, rate, path):
    return f"""      {name}:
        nodes:
          g: {{ type: receiver:generator, config: {{ rate: {rate} }}, to: [out] }}
          out: {{ type: exporter:file, config: {{ path: "{path}" }} }}
"""


class Reload(EngineTest):
    def write(self, engine, pipelines, state=""):
        text = (CONFIG.replace("HTTP", str(self.http_port)).replace("STATE", state)
                .replace("PIPELINES", "".join(pipelines)).replace("{RUN}", engine.run_dir))
        with open(engine.config_path, "w") as f:
            f.write(text.replace("{OUT}", engine.out_dir))

    def test_sighup_applies_each_difference_and_an_invalid_file_changes_nothing(self):
        self.http_port = free_port()
        out = "{OUT}/{pipeline}-{generation}.ndjson"
        text = (CONFIG.replace("HTTP", str(self.http_port)).replace("STATE", "")
                .replace("PIPELINES", pipeline("keep", 10, out) + pipeline("change", 10, out) + pipeline("drop", 10, out)))
        engine = self.start_engine(text)
        admin = Admin(engine, self.http_port)
        admin.wait_ready()
        keep_pid = engine.instances()["default/keep@1#0"]
        status, _, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/api-made", body={"pipeline": {
            "nodes": {"g": {"type": "receiver:generator", "to": ["out"]}, "out": {"type": "exporter:null"}}}})
        self.assertEqual(status, 200)
        self.write(engine, [pipeline("keep", 10, out), pipeline("change", 20, out), pipeline("added", 10, out)])
        engine.signal(signal.SIGHUP)
        engine.wait_log(r"config reloaded .* applied=3 skipped=0 removed=1")
        wait_until(lambda: set(engine.instances()) == {"default/keep@1#0", "default/change@2#0",
                                                        "default/added@1#0", "default/api-made@1#0"},
                   10, "the file's changes applied")
        self.assertEqual(engine.instances()["default/keep@1#0"], keep_pid, "an unchanged pipeline is a noop")
        # Its instance's exit and its shutdown's end (which forgets it) are one loop turn apart.
        wait_until(lambda: admin.http("GET", "/api/v1/groups/default/pipelines/drop")[0] == 404, 10,
                   "the dropped pipeline forgotten")
        # The old instance's exit and the rollout's end are one loop turn apart.
        history = wait_until(lambda: (lambda h: h if h[0]["state"] != "running" else None)(
            admin.http("GET", "/api/v1/groups/default/pipelines/change/rollouts")[1]), 10, "the rollout's end")
        self.assertEqual((history[0]["action"], history[0]["state"]), ("replace", "succeeded"))
        # an invalid file: nothing changes, and it says why, in the log and as an event
        sub = admin.subscribe("config.")
        with open(engine.config_path, "a") as f:
            f.write("      broken: { nodes: { g: { type: receiver:pigeon } } }\n")
        before = engine.instances()
        engine.signal(signal.SIGHUP)
        engine.wait_log(r"reload refused, nothing changed: .*drover.yaml:\d+: groups.default.pipelines.broken")
        event = None
        deadline = time.monotonic() + 5
        while event is None and time.monotonic() < deadline:
            if sub.poll(200):
                topic, data = sub.recv_multipart()
                if topic == b"config.invalid":
                    event = msgpack.unpackb(data)
        sub.close()
        self.assertIsNotNone(event, "a config.invalid event")
        self.assertIn("groups.default.pipelines.broken.nodes.g.type", event["reason"])
        self.assertEqual(engine.instances(), before)
        self.assertEqual(admin.http("GET", "/readyz")[0], 200)

    def test_a_reload_keeps_an_api_change_until_the_file_entry_changes(self):
        self.http_port = free_port()
        out = "{OUT}/{pipeline}-{generation}.ndjson"
        engine = self.start_engine(CONFIG.replace("HTTP", str(self.http_port)).replace("STATE", "")
                                   .replace("PIPELINES", pipeline("p", 10, out)))
        admin = Admin(engine, self.http_port)
        admin.wait_ready()
        status = lambda: admin.http("GET", "/api/v1/groups/default/pipelines/p/status")[1]
        rate = lambda: admin.http("GET", "/api/v1/groups/default/pipelines/p")[1]["spec"]["nodes"]["g"]["config"]["rate"]
        self.assertEqual(status()["source"], "config")
        spec = admin.http("GET", "/api/v1/groups/default/pipelines/p")[1]["spec"]
        spec["nodes"]["g"]["config"]["rate"] = 33
        self.assertEqual(admin.http("PUT", "/api/v1/groups/default/pipelines/p", body={"pipeline": spec})[0], 200)
        self.assertEqual((status()["source"], status()["generation"], rate()), ("api", 2, 33))
        # SIGHUP with the file's entry as it was: the API's change stands.
        engine.signal(signal.SIGHUP)
        engine.wait_log(r"config reloaded .* applied=0 skipped=0 removed=0")
        self.assertEqual((status()["source"], status()["generation"], rate()), ("api", 2, 33))
        # The entry changed in the file: it wins, said in the log and as config.changed.
        events = admin.subscribe("config.")
        self.write(engine, [pipeline("p", 44, out)])
        engine.signal(signal.SIGHUP)
        wait_until(lambda: status()["generation"] == 3, 10, "the file's change applied")
        self.assertEqual((status()["source"], rate()), ("config", 44))
        self.assertRegex(engine.log_text(), r"pipeline=default:p changed in the config file: its entry "
                                            r"replaces the API's change \(generation 2\)")
        while True:
            topic, payload = events.recv_multipart()
            if topic == b"config.changed":
                break
        self.assertIn("replaces the change made through the API", msgpack.unpackb(payload)["reason"])
        events.close()

    def test_rollout_ids_and_generation_numbers_are_never_given_twice(self):
        self.http_port = free_port()
        engine = Engine("placeholder")
        self.addCleanup(engine.cleanup)
        self.write(engine, [], f"  state_file: {engine.dir}/state.json")
        engine.start()
        admin = Admin(engine, self.http_port)
        admin.wait_ready()
        path = "/api/v1/groups/default/pipelines/p"

        def put(rate, out="{OUT}/p.ndjson"):
            spec = {"pipeline": {"nodes": {"g": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["out"]},
                                           "out": {"type": "exporter:file", "config": {"path": out}}}},
                    "step_timeout_secs": 5}
            body = admin.http("PUT", path, body=json.loads(json.dumps(spec).replace("{OUT}", engine.out_dir)),
                              timeout=30)[1]
            return body.get("rollout", body)  # a failed one comes with its error
        self.assertEqual(put(1)["target_generation"], 1)
        failed = put(2, out="/proc/none/p.ndjson")  # its instance cannot open the file: rolled back
        self.assertEqual((failed["state"], failed["target_generation"]), ("failed", 2))
        self.assertEqual(put(3)["target_generation"], 3, "a failed rollout's number is not given again")
        ids = {r["rollout_id"] for r in admin.http("GET", path + "/rollouts")[1]}
        engine.signal(signal.SIGTERM)
        self.assertEqual(engine.wait_exit(20), 0)
        engine.log.close()
        engine.start()
        admin.wait_ready()
        wait_until(lambda: admin.http("GET", path + "/status")[1]["phase"] == "running", 10, "p back")
        history = admin.http("GET", path + "/rollouts")[1]
        self.assertLessEqual(ids, {r["rollout_id"] for r in history}, "the history survives the restart")
        self.assertEqual(history[0]["cause"], "restart")  # and goes on with the restart's own
        old = sorted(ids)[0]
        self.assertEqual(admin.http("GET", f"{path}/rollouts/{old}")[1]["rollout_id"], old)
        after = put(4)
        self.assertEqual(after["target_generation"], 4)
        self.assertEqual(admin.http("GET", path + "/rollouts")[1][0]["rollout_id"], after["rollout_id"])
        self.assertNotIn(after["rollout_id"], ids, "rollout ids are unique across restarts")
        self.assertGreater(int(after["rollout_id"].split("-")[1]), max(int(i.split("-")[1]) for i in ids))

    def test_sighup_is_admitted_like_a_put(self):
        """SIGHUP used to skip the endpoint check: a pipeline from the file
        could claim a receiver endpoint an API-made pipeline holds."""
        self.http_port = free_port()
        zmq_port = free_port()
        out = "{OUT}/{pipeline}-{generation}.ndjson"
        engine = self.start_engine(CONFIG.replace("HTTP", str(self.http_port)).replace("STATE", "")
                                   .replace("PIPELINES", pipeline("keep", 10, out)))
        admin = Admin(engine, self.http_port)
        admin.wait_ready()

        def zmq_pipeline(name):
            return {"nodes": {"in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{zmq_port}"},
                                     "to": ["out"]}, "out": {"type": "exporter:null"}}}

        status, _, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/holder", body={"pipeline": zmq_pipeline("holder")})
        self.assertEqual(status, 200)
        # The same claim over the API is refused, naming the node's path ...
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/rival", body={"pipeline": zmq_pipeline("rival")})
        self.assertEqual(status, 422)
        self.assertIn("nodes.in.config.endpoint", str(body))
        # ... and from the file on SIGHUP it is skipped, saying why.
        rival = f"""      rival:
        nodes:
          in: {{ type: receiver:zmq, config: {{ endpoint: "tcp://127.0.0.1:{zmq_port}" }}, to: [out] }}
          out: {{ type: exporter:null }}
"""
        self.write(engine, [pipeline("keep", 10, out), rival])
        engine.signal(signal.SIGHUP)
        engine.wait_log(r"reload: skipped pipeline=default:rival reason=.*endpoint tcp://127.0.0.1:%d is already bound "
                        r"by pipeline default:holder" % zmq_port)
        engine.wait_log(r"config reloaded .* applied=1 skipped=1 removed=0")
        self.assertEqual(admin.http("GET", "/api/v1/groups/default/pipelines/rival")[0], 404)
        self.assertEqual(admin.http("GET", "/api/v1/groups/default/pipelines/holder")[0], 200)

    def test_script_file_is_read_again_on_sighup_and_on_restore(self):
        """Contract 6.2: processor:lua's script_file is read when the spec is
        applied: PUT (test_lua), SIGHUP reload and restore from the state file."""
        self.http_port = free_port()
        engine = Engine("placeholder")
        self.addCleanup(engine.cleanup)
        script = os.path.join(engine.dir, "tag.lua")

        def version(v):
            with open(script, "w") as f:
                f.write(f"function process(r) r.v = {v} return r end\n" if v else "function process(r)\n")

        def seen(generation):
            path = os.path.join(engine.out_dir, f"lua-{generation}.ndjson")
            return {r["v"] for r in read_ndjson(path)} if os.path.exists(path) else set()

        version(1)
        lua = f"""      lua:
        nodes:
          g: {{ type: receiver:generator, config: {{ rate: 50 }}, to: [s] }}
          s: {{ type: processor:lua, config: {{ script_file: "{script}" }}, to: [out] }}
          out: {{ type: exporter:file, config: {{ path: "{{OUT}}/{{pipeline}}-{{generation}}.ndjson" }} }}
"""
        self.write(engine, [lua], f"  state_file: {engine.dir}/state.json")
        engine.start()
        Admin(engine, self.http_port).wait_ready()
        wait_until(lambda: seen(1) == {1}, 10, "script v1 running")

        def made():
            metrics = Admin(engine, self.http_port).http("GET", "/metrics")[1]
            found = re.search(r'^drover_node_records_in_total\{group="default",pipeline="lua",node="g",'
                              r'generation="1"\} (\d+)$', metrics if isinstance(metrics, str) else metrics.decode(),
                              re.M)
            return found and int(found.group(1)) > 0
        wait_until(made, 10, "the generator counting what it made as its records in")
        pid = engine.instances()["default/lua@1#0"]
        engine.signal(signal.SIGHUP)
        engine.wait_log(r"config reloaded .* applied=1")
        self.assertEqual(engine.instances(), {"default/lua@1#0": pid}, "the same text: a no-op")
        version(2)
        engine.signal(signal.SIGHUP)
        wait_until(lambda: seen(2) == {2}, 10, "the changed file: a replace to generation 2")

        def saved_generation():
            try:
                with open(f"{engine.dir}/state.json") as f:
                    return json.load(f)["groups"]["default"]["pipelines"]["lua"]["generation"]
            except (OSError, ValueError, KeyError):
                return None
        wait_until(lambda: saved_generation() == 2, 10, "the replace's end saved in the state file")
        version(None)
        engine.signal(signal.SIGHUP)
        engine.wait_log(r"reload refused, nothing changed: .*pipelines.lua.nodes.s.config.script_file: "
                        r"syntax error at line 2")
        self.assertIn("default/lua@2#0", engine.instances())
        version(3)
        engine.signal(signal.SIGTERM)
        self.assertEqual(engine.wait_exit(20), 0)
        engine.log.close()
        engine.start()
        # The script is part of the file's entry: it changed while droverd was
        # stopped, so the file's spec is applied, as a new generation.
        wait_until(lambda: seen(3) == {3}, 10, "the file's entry, script read again, as generation 3")
        self.assertIn("restart: pipeline=default:lua its entry in the config file changed", engine.log_text())

    def test_runtime_changes_survive_a_restart_through_the_state_file(self):
        self.http_port = free_port()
        engine = Engine("placeholder")
        self.addCleanup(engine.cleanup)
        state = f"  state_file: {engine.dir}/state.json"
        out = "{OUT}/{pipeline}-{generation}.ndjson"
        self.write(engine, [pipeline("base", 10, out)], state)
        engine.start()
        admin = Admin(engine, self.http_port)
        admin.wait_ready()
        self.assertEqual(admin.http("PUT", "/api/v1/groups/team")[0], 200)
        spec = {"pipeline": {"cores": {"count": 2}, "nodes": {
            "g": {"type": "receiver:generator", "config": {"rate": 5}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        self.assertEqual(admin.http("PUT", "/api/v1/groups/team/pipelines/extra", body=spec)[0], 200)
        spec["pipeline"]["nodes"]["g"]["config"]["rate"] = 6
        self.assertEqual(admin.http("PUT", "/api/v1/groups/team/pipelines/extra", body=spec)[0], 200)
        self.assertEqual(admin.http("POST", "/api/v1/groups/default/pipelines/base/shutdown")[0], 200)
        wait_until(lambda: os.path.exists(f"{engine.dir}/state.json"), 5, "state file written")
        engine.signal(signal.SIGTERM)
        self.assertEqual(engine.wait_exit(20), 0)
        engine.log.close()
        # the same config file, a new droverd: the operator's changes are back
        engine.start()
        admin.wait_ready()
        wait_until(lambda: set(engine.instances()) == {"team/extra@2#0", "team/extra@2#1"}, 10,
                   "restored instances, same generation")
        status, got, _ = admin.http("GET", "/api/v1/groups/team/pipelines/extra")
        self.assertEqual((status, got["spec"]["nodes"]["g"]["config"]["rate"]), (200, 6))
        status, base, _ = admin.http("GET", "/api/v1/groups/default/pipelines/base/status")
        self.assertEqual(base["phase"], "stopped", "a shut-down pipeline stays down")
        self.assertIn("restored from state file", engine.log_text())
        with open(f"{engine.dir}/state.json", "w") as f:
            f.write("{ broken")
        engine.signal(signal.SIGTERM)
        engine.wait_exit(20)
        engine.log.close()
        engine.start()
        admin.wait_ready()
        self.assertIn("state file unusable, starting from the config file", engine.log_text())
        wait_until(lambda: "default/base@1#0" in engine.instances(), 10, "config file pipelines")

    def test_a_config_edit_while_stopped_wins_and_api_changes_are_kept(self):
        """Contract 7.4: the file is the desired state of what it names; an
        entry changed while droverd was stopped is applied at start; what
        changed only through the API keeps its API spec."""
        self.http_port = free_port()
        engine = Engine("placeholder")
        self.addCleanup(engine.cleanup)
        state = f"  state_file: {engine.dir}/state.json"
        out = "{OUT}/{pipeline}-{generation}.ndjson"
        self.write(engine, [pipeline("edited", 10, out), pipeline("api", 10, out), pipeline("deleted", 10, out)], state)
        engine.start()
        admin = Admin(engine, self.http_port)
        admin.wait_ready()
        path = "/api/v1/groups/default/pipelines"
        status, body, _ = admin.http("GET", f"{path}/api")
        spec = {"pipeline": body["spec"]}
        spec["pipeline"]["nodes"]["g"]["config"]["rate"] = 7
        self.assertEqual(admin.http("PUT", f"{path}/api", body=spec)[0], 200)
        self.assertEqual(admin.http("DELETE", f"{path}/deleted")[0], 200)

        def saved():
            try:
                with open(f"{engine.dir}/state.json") as f:
                    return json.load(f)["groups"]["default"]["pipelines"]
            except (OSError, ValueError, KeyError):
                return {}
        wait_until(lambda: saved().get("api", {}).get("generation") == 2 and "deleted" not in saved(), 10,
                   "the API's changes saved")

        def restart(pipelines):
            engine.signal(signal.SIGTERM)
            self.assertEqual(engine.wait_exit(20), 0)
            engine.log.close()
            self.write(engine, pipelines, state)
            engine.start()
            admin.wait_ready()

        def rate(name):
            status, body, _ = admin.http("GET", f"{path}/{name}")
            gen = admin.http("GET", f"{path}/{name}/status")[1].get("generation") if status == 200 else None
            return (gen, body["spec"]["nodes"]["g"]["config"]["rate"]) if status == 200 else status

        # Edited while stopped: one entry changed, one added; the API's two changes untouched in the file.
        restart([pipeline("edited", 20, out), pipeline("api", 10, out), pipeline("deleted", 10, out),
                 pipeline("added", 10, out)])
        wait_until(lambda: set(engine.instances()) == {"default/edited@2#0", "default/api@2#0", "default/added@1#0"},
                   10, "the file's edit and addition applied, the API's changes kept")
        self.assertEqual((rate("edited"), rate("api"), rate("added"), rate("deleted")),
                         ((2, 20), (2, 7), (1, 10), 404))
        log = engine.log_text()
        self.assertIn("restart: pipeline=default:edited its entry in the config file changed since the state file "
                      "was written: the file's spec is applied (generation 2)", log)
        self.assertIn("restart: pipeline=default:added its entry is new in the config file", log)
        self.assertNotIn("pipeline=default:api its entry", log)
        # Evented as config.changed (the event stream keeps it for whoever looks later).
        from streams import SSE
        stream = SSE(self.http_port, "/api/v1/events?topics=config.changed")
        self.addCleanup(stream.close)
        changed = {e[2]["pipeline"]: e[2] for e in stream.events(2, topic="config.changed")}
        self.assertEqual(sorted(changed), ["added", "edited"])
        self.assertEqual(changed["edited"]["generation"], 2)
        # Nothing edited: everything as it ran. Then an entry removed from the file is not started.
        wait_until(lambda: saved().get("edited", {}).get("generation") == 2, 10, "the restart's state saved")
        restart([pipeline("edited", 20, out), pipeline("api", 10, out), pipeline("deleted", 10, out),
                 pipeline("added", 10, out)])
        wait_until(lambda: set(engine.instances()) == {"default/edited@2#0", "default/api@2#0", "default/added@1#0"},
                   10, "the same as before the restart")
        self.assertNotIn("in the config file changed", engine.log_text())
        restart([pipeline("api", 10, out), pipeline("deleted", 10, out), pipeline("added", 10, out)])
        wait_until(lambda: set(engine.instances()) == {"default/api@2#0", "default/added@1#0"}, 10,
                   "the entry gone from the file not started")
        self.assertIn("restart: pipeline=default:edited is gone from the config file", engine.log_text())
        self.assertEqual(rate("edited"), 404)


if __name__ == "__main__":
    unittest.main(verbosity=2)
