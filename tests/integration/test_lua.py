"""processor:lua through the real binaries: the examples of
docs/operations.md (examples/lua/) end to end, records as tables and back
(64-bit integers, nesting, empty lists, binary), every sandbox escape
refused and counted, an endless loop cut off, a memory bomb stopped, a
syntax error refused at PUT naming the line, script_file re-read on each
apply (same file: no-op; changed file: replace), a script that fails at
start rolled back, and per-node counters in /metrics; all of it again
with record: lazy."""

import glob
import hashlib
import os
import re
import shutil
import tempfile
import unittest

import msgpack

from harness import ndjson, EngineTest, curl_post, free_port, read_ndjson, unobserved, wait_until

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "lua")


def example(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        return f.read()


class Lua(EngineTest):
    UNTOUCHED_AS_IT_CAME = False  # tables: every field goes through Lua and back

    def setUp(self):
        self.start_admin_engine()
        self.port = free_port()
        self.scripts = tempfile.mkdtemp(prefix="drover-lua-")
        self.addCleanup(shutil.rmtree, self.scripts, True)

    def file(self, name):
        return {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/{name}-{{core}}-{{generation}}.ndjson"}}

    def rows(self, name="out"):
        found = []
        for path in sorted(glob.glob(f"{self.engine.out_dir}/{name}-*.ndjson")):
            found += read_ndjson(path)
        return unobserved(found)

    def spec(self, lua_config, to=("out",), **extra):
        nodes = {"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["s"]},
                 "s": {"type": "processor:lua", "config": lua_config, "to": list(to)}}
        nodes.update(extra or {"out": self.file("out")})
        return {"pipeline": {"cores": {"count": 1}, "nodes": nodes,
                             "policies": {"rollout": {"step_timeout_secs": 10, "drain_timeout_secs": 10}}}}

    def put(self, spec, name="p"):
        return self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec)

    def send(self, records):
        status, body, _, _ = curl_post(self.port, "/", ndjson(records), "application/x-ndjson")
        self.assertEqual(status, 200, body)

    def script_file(self, name, text):
        path = os.path.join(self.scripts, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def node_metrics(self, node="s"):
        status, body, _ = self.admin.http("GET", "/metrics")
        self.assertEqual(status, 200)
        text = body if isinstance(body, str) else body.decode()
        found = {}
        for name in ("records_in", "records_out", "records_dropped", "errors"):
            m = re.search(rf'^drover_node_{name}_total{{group="default",pipeline="p",node="{node}",'
                          rf'generation="\d+"}} (\d+)$', text, re.M)
            found[name] = int(m.group(1)) if m else None
        return found

    def lua_config(self):
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p")
        self.assertEqual(status, 200, body)
        return body["spec"]["nodes"]["s"]["config"]

    # ------------------------------------------------------------ the examples

    def test_example_parse_an_nginx_access_line(self):
        path = self.script_file("nginx.lua", example("nginx_access.lua"))
        self.assertEqual(self.put(self.spec({"script_file": path}))[0], 200)
        self.send([{"message": '10.1.2.3 - alice [10/Oct/2026:13:55:36 +0000] "GET /a?b=1 HTTP/1.1" 200 2326 '
                               '"https://example.org/" "curl/8.1.2"'},
                   {"message": "not an access line"}])
        rows = wait_until(lambda: (lambda r: r if len(r) == 2 else None)(self.rows()), 10, "two records")
        self.assertEqual(rows[0], {"client": "10.1.2.3", "user": "alice", "time_local": "10/Oct/2026:13:55:36 +0000",
                                   "method": "GET", "path": "/a?b=1", "protocol": "HTTP/1.1", "status": 200,
                                   "bytes": 2326, "referer": "https://example.org/", "user_agent": "curl/8.1.2"})
        self.assertEqual(rows[1]["parse_error"], "not an nginx combined access line")

    def test_example_redact_an_email_address(self):
        path = self.script_file("redact.lua", example("redact_email.lua"))
        self.assertEqual(self.put(self.spec({"script_file": path}))[0], 200)
        self.send([{"message": "login by jane.doe+ops@example.co.uk from bob@corp.example"}, {"message": "none"}])
        rows = wait_until(lambda: (lambda r: r if len(r) == 2 else None)(self.rows()), 10, "two records")
        self.assertEqual(rows[0], {"message": "login by <redacted> from <redacted>", "redacted": 2})
        self.assertEqual(rows[1], {"message": "none"})

    def test_example_drop_health_check_noise(self):
        path = self.script_file("health.lua", example("drop_health_checks.lua"))
        self.assertEqual(self.put(self.spec({"script_file": path}))[0], 200)
        self.send([{"n": 1, "path": "/healthz"}, {"n": 2, "path": "/api"}, {"n": 3, "path": "/x", "user_agent": "kube-probe/1.29"},
                   {"n": 4, "path": "/readyz"}, {"n": 5, "path": "/"}])
        wait_until(lambda: [r["n"] for r in self.rows()] == [2, 5], 10, "only the real requests")
        wait_until(lambda: self.node_metrics() == {"records_in": 5, "records_out": 2, "records_dropped": 3,
                                                   "errors": 0}, 10, "the node's counters in /metrics")
        self.assertEqual(self.node_metrics("in"), {"records_in": 5, "records_out": 5, "records_dropped": 0, "errors": 0})
        self.assertEqual(self.node_metrics("out"), {"records_in": 2, "records_out": 2, "records_dropped": 0,
                                                    "errors": 0})

    def test_example_split_a_batch_record_into_several(self):
        path = self.script_file("split.lua", example("split_batch.lua"))
        self.assertEqual(self.put(self.spec({"script_file": path}))[0], 200)
        self.send([{"batch": "b1", "host": "h", "items": [{"v": 1}, {"v": 2}, {"v": 3}]}, {"batch": "b2", "items": []},
                   {"other": True}])
        rows = wait_until(lambda: (lambda r: r if len(r) == 4 else None)(self.rows()), 10, "four records")
        self.assertEqual(rows[:3], [{"batch": "b1", "host": "h", "index": i, "item": {"v": i}} for i in (1, 2, 3)])
        self.assertEqual(rows[3], {"other": True})
        wait_until(lambda: self.node_metrics() == {"records_in": 3, "records_out": 4, "records_dropped": 1,
                                                   "errors": 0}, 10, "in 3, out 4, the empty batch dropped")

    def test_example_route_errors_to_one_exporter_and_the_rest_to_another(self):
        path = self.script_file("classify.lua", example("classify_level.lua"))
        spec = self.spec({"script_file": path}, to=("r",),
                         r={"type": "processor:route", "config": {
                             "routes": [{"when": {"field": "level", "op": "eq", "value": "error"}, "to": ["errors"]}],
                             "default": ["rest"]}},
                         errors=self.file("errors"), rest=self.file("rest"))
        self.assertEqual(self.put(spec)[0], 200)
        self.send([{"n": n, "status": status} for n, status in enumerate([200, 503, 404, 500, 301])])
        wait_until(lambda: sorted(r["n"] for r in self.rows("errors")) == [1, 3], 10, "5xx to errors")
        wait_until(lambda: sorted(r["n"] for r in self.rows("rest")) == [0, 2, 4], 10, "the rest to rest")
        self.assertEqual({r["level"] for r in self.rows("rest")}, {"info", "warn"})

    # ------------------------------------------------------------ records as tables

    def test_values_survive_the_round_trip_through_lua(self):
        script = "function process(r) r.seen = true; r.tags[#r.tags + 1] = 'lua'; return r end"
        self.assertEqual(self.put(self.spec({"script": script}))[0], 200)
        record = {"time_unix_nano": 1763900000123456789, "neg": -9007199254740993, "f": 1.5, "whole": 2.0,
                  "s": "héllo", "bin": b"\x00\xff\x80", "nested": {"a": [1, {"b": None}], "empty": []},
                  "tags": ["x"], "t": True}
        status, body, _, _ = curl_post(self.port, "/", msgpack.packb(record, use_bin_type=True), "application/msgpack")
        self.assertEqual(status, 200, body)
        rows = wait_until(lambda: self.rows() or None, 10, "the record")
        got = rows[0]
        self.assertEqual(got["time_unix_nano"], 1763900000123456789, "64-bit integers stay exact")
        self.assertEqual(got["neg"], -9007199254740993)
        self.assertEqual((got["f"], got["whole"]), (1.5, 2.0))
        self.assertIsInstance(got["whole"], float, "a float stays a float")
        #  A table cannot hold a nil: a Lua table drops the key. A lazy record
        #  gives back a field the script did not touch as it came.
        kept = {"b": None} if self.UNTOUCHED_AS_IT_CAME else {}
        self.assertEqual(got["nested"], {"a": [1, kept], "empty": []}, "an empty list stays a list")
        self.assertEqual(got["tags"], ["x", "lua"])
        self.assertEqual((got["s"], got["t"], got["seen"]), ("héllo", True, True))

    def test_keys_come_back_as_they_went_whatever_the_key_cache_holds(self):
        # Keys of every length around the key cache's limits (8 bytes read
        # from each end, 40 the longest cached), keys alike at both ends and
        # different in the middle (the same slot, told apart by bytes), and
        # more keys than the cache has slots, over several records.
        script = "function process(r) r.n = r.n + 1; return r end"
        self.assertEqual(self.put(self.spec({"script": script}))[0], 200)
        keys = ["k" * n for n in range(1, 46)]
        keys += [f"{'a' * 8}{i:04d}{'z' * 8}" for i in range(300)]
        keys += ["é" * 4, "e\u0301", "x y", "0" * 7 + "1", "1" + "0" * 7]
        records = []
        for i in range(6):
            record = {k: f"{k}:{i}" for k in keys[i::3]}
            record["n"] = i
            records.append(record)
        self.send(records)
        rows = wait_until(lambda: self.rows() if len(self.rows()) == len(records) else None, 10, "every record")
        for sent, got in zip(records, sorted(rows, key=lambda r: r["n"])):
            self.assertEqual(got, dict(sent, n=sent["n"] + 1))

    # ------------------------------------------------------------ the sandbox

    ESCAPES = {
        "io_open": "io.open('/etc/passwd')",
        "os_execute": "os.execute('touch MARK')",
        "require": "require('os').execute('touch MARK')",
        "load": "load('return 1')()",
        "loadstring": "loadstring('return 1')()",
        "dofile": "dofile('/etc/passwd')",
        "loadfile": "loadfile('/etc/passwd')()",
        "debug_sethook": "debug.sethook()",
        "package": "package.loadlib('libc.so.6', 'system')",
        "string_rep_bomb": "local s = string.rep('x', 1 << 30)",
        "table_of_strings": "local t = {} for i = 1, 100000 do t[i] = string.rep('y', 1000) .. i end",
        "endless_loop": "while true do end",
        "endless_recursion": "local function f() return 1 + f() end f()",
        "error_value": "error({})",
    }

    def test_every_sandbox_escape_fails_safely_counted_and_the_next_record_is_fine(self):
        mark = os.path.join(self.scripts, "escaped")
        cases = "\n".join(f"attempts.{name} = function() {code.replace('MARK', mark)} end"
                          for name, code in self.ESCAPES.items())
        script = ("attempts = {}\n" + cases + "\n"
                  "calls = 0\n"
                  "function process(r)\n"
                  "  calls = calls + 1\n"
                  "  if r.attempt then attempts[r.attempt]() r.escaped = true return r end\n"
                  "  r.calls = calls\n"
                  "  return r\n"
                  "end\n")
        spec = self.spec({"script": script, "max_memory_bytes": 16 * 1024 * 1024})
        self.assertEqual(self.put(spec)[0], 200, script)
        pid = self.engine.instances()["default/p@1#0"]
        for i, name in enumerate(self.ESCAPES):
            self.send([{"attempt": name}, {"n": i}])
        n = len(self.ESCAPES)
        rows = wait_until(lambda: (lambda r: r if len(r) == n else None)(self.rows()), 30, "every plain record")
        self.assertEqual([r.get("n") for r in rows], list(range(n)), "each attempt failed, the record after it fine")
        self.assertEqual([r["calls"] for r in rows], [2 * i + 2 for i in range(n)], "globals persist across calls")
        self.assertFalse(os.path.exists(mark), "nothing ran outside the sandbox")
        self.assertEqual(self.engine.instances()["default/p@1#0"], pid, "the instance survived every attempt")
        wait_until(lambda: self.node_metrics() == {"records_in": 2 * n, "records_out": n, "records_dropped": n,
                                                   "errors": n}, 10, "every attempt counted as an error")
        log = self.engine.log_text()
        self.assertIn("record failed node=s", log)

    def test_limits_name_themselves_and_pass_on_error_hands_the_record_on(self):
        script = ("function process(r)\n"
                  "  if r.loop then while true do end end\n"
                  "  if r.big then local s = string.rep('x', 64 * 1024 * 1024) end\n"
                  "  if r.boom then error('boom ' .. r.boom) end\n"
                  "  if r.fn then return print end\n"
                  "  r.ok = true return r\n"
                  "end\n")
        spec = self.spec({"script": script, "on_error": "pass", "max_instructions": 100000,
                          "max_memory_bytes": 8 * 1024 * 1024})
        self.assertEqual(self.put(spec)[0], 200)
        self.send([{"loop": True}])
        self.engine.wait_log(r'record failed node=s reason="instruction limit reached \(max_instructions 100000\)"')
        self.send([{"big": True}, {"boom": 7}, {"fn": 1}, {"n": 1}])
        rows = wait_until(lambda: (lambda r: r if len(r) == 5 else None)(self.rows()), 10, "five records")
        self.assertEqual(rows, [{"loop": True}, {"big": True}, {"boom": 7}, {"fn": 1}, {"n": 1, "ok": True}],
                         "on_error pass: a failed record goes on unchanged")
        wait_until(lambda: self.node_metrics()["errors"] == 4, 10, "four errors")

    def test_memory_limit_is_named_in_the_log(self):
        script = "function process(r) local s = string.rep('x', 1 << 30) return r end"
        self.assertEqual(self.put(self.spec({"script": script}))[0], 200)
        self.send([{"n": 1}])
        self.engine.wait_log(r'record failed node=s reason="memory limit reached \(max_memory_bytes 67108864\)"')

    # ------------------------------------------------------------ applying scripts

    def test_a_syntax_error_is_a_422_naming_the_line(self):
        status, body, _ = self.put(self.spec({"script": "function process(r)\n  r.x = = 1\n  return r\nend\n"}))
        self.assertEqual(status, 422, body)
        detail = body["error"]["details"][0]
        self.assertEqual(detail["path"], "nodes.s.config.script")
        self.assertIn("syntax error at line 2:", detail["message"])
        path = self.script_file("bad.lua", "function process(r)\n\n\n  return r\n")
        status, body, _ = self.put(self.spec({"script_file": path}))
        self.assertEqual(status, 422, body)
        self.assertEqual(body["error"]["details"][0]["path"], "nodes.s.config.script_file")
        self.assertIn("line 5:", body["error"]["details"][0]["message"])
        self.assertIn("'end' expected", body["error"]["details"][0]["message"])
        cases = [({"script_file": os.path.join(self.scripts, "missing.lua")}, "nodes.s.config.script_file",
                  "missing.lua: cannot open: No such file or directory"),
                 ({"script": "function process(r) return r end", "script_file": path}, "nodes.s.config",
                  "not both"),
                 ({}, "nodes.s.config", "give the script"),
                 ({"script_file": "/dev/stdin"}, "nodes.s.config.script_file", "not a regular file"),
                 ({"script_file": "relative.lua"}, "nodes.s.config.script_file", "absolute path"),
                 ({"script": "x = 1", "function": "no-such"}, "nodes.s.config.function", "not a Lua name"),
                 ({"script": "x = 1", "on_error": "retry"}, "nodes.s.config.on_error", "drop pass"),
                 ({"script": "\x1bLua"}, "nodes.s.config.script", "syntax error")]
        for config, where, what in cases:
            status, body, _ = self.put(self.spec(config))
            self.assertEqual(status, 422, (config, body))
            details = body["error"]["details"]
            self.assertTrue(any(d["path"] == where and what in d["message"] for d in details), (config, details))
        status, _, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p")
        self.assertEqual(status, 404, "nothing was created")

    def test_script_file_is_read_on_each_apply_same_text_is_a_noop_a_change_a_replace(self):
        path = self.script_file("tag.lua", "function process(r) r.v = 1 return r end")
        status, body, _ = self.put(self.spec({"script_file": path}))
        self.assertEqual((status, body["action"]), (200, "create"), body)
        config = self.lua_config()
        self.assertEqual(config["script"], "function process(r) r.v = 1 return r end")
        first_digest = config["script_sha1"]
        self.assertEqual(first_digest, hashlib.sha1(b"function process(r) r.v = 1 return r end").hexdigest(),
                         "what sha1sum prints for the file")
        self.assertEqual(self.put(self.spec({"script_file": path}))[1]["action"], "noop")
        self.send([{"n": 1}])
        wait_until(lambda: [r.get("v") for r in self.rows()] == [1], 10, "v1 running")
        self.script_file("tag.lua", "function process(r) r.v = 2 return r end")
        status, body, _ = self.put(self.spec({"script_file": path}))
        self.assertEqual((status, body["action"], body["target_generation"]), (200, "replace", 2), body)
        config = self.lua_config()
        self.assertNotEqual(config["script_sha1"], first_digest)
        self.send([{"n": 2}])
        wait_until(lambda: sorted(r.get("v") for r in self.rows()) == [1, 2], 10, "v2 running")

    def test_a_script_that_fails_at_start_rolls_back_and_the_old_one_keeps_serving(self):
        self.assertEqual(self.put(self.spec({"script": "function process(r) r.v = 1 return r end"}))[0], 200)
        status, body, _ = self.put(self.spec({"script": "error('cannot start: no lookup table')"}))
        self.assertEqual(status, 409, body)
        self.assertIn("cannot start: no lookup table", body["rollout"]["failure_reason"])
        status, body, _ = self.put(self.spec({"script": "x = 1", "function": "process"}))
        self.assertEqual(status, 409, body)
        self.assertIn("defines no function process", body["rollout"]["failure_reason"])
        self.send([{"n": 1}])
        wait_until(lambda: [r.get("v") for r in self.rows()] == [1], 10, "generation 1 still serving")

    def test_a_script_change_under_load_through_a_replace_loses_and_duplicates_nothing(self):
        from test_rollout import Load
        port = free_port()

        def spec(version):
            script = f"count = 0\nfunction process(r) count = count + 1 r.v = {version} r.nth = count return r end"
            return {"pipeline": {"cores": {"count": 2}, "nodes": {
                "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["s"]},
                "s": {"type": "processor:lua", "config": {"script": script}, "to": ["out"]},
                "out": self.file("out")},
                "policies": {"rollout": {"step_timeout_secs": 10, "drain_timeout_secs": 10}}}}

        self.assertEqual(self.put(spec(1))[0], 200)
        self.engine.wait_log(r"instance connected instance=default/p@1#1")
        with Load(port) as load:
            wait_until(lambda: load.sent > 2000, 10, "load flowing")
            for version in (2, 3, 4):
                status, body, _ = self.put(spec(version))
                self.assertEqual((status, body["action"], body["target_generation"]), (200, "replace", version), body)
                # Its script serves before the next replace (a replace can otherwise
                # follow so fast that a generation never sees a batch).
                wait_until(lambda: any(r.get("v") == version for r in self.rows()), 10, f"version {version} serving")
            at_cutover = load.sent
            wait_until(lambda: load.sent > at_cutover + 2000, 10, "load after the last cutover")
        wait_until(lambda: len(self.rows()) >= load.sent, 20, f"all {load.sent} records exported")
        rows = self.rows()
        self.assertEqual(sorted(r["seq"] for r in rows), list(range(load.sent)), "every record exactly once")
        self.assertEqual(max(rows, key=lambda r: r["seq"])["v"], 4, "the last script runs after the cutover")
        self.assertEqual({r["v"] for r in rows}, {1, 2, 3, 4}, "each generation's script ran")


class LuaLazy(Lua):
    """Every test above again with record: lazy (worker/lua/drv_lua_lazy.h):
    the examples, the round trip, the sandbox and the limits give what
    tables give."""

    UNTOUCHED_AS_IT_CAME = True

    def spec(self, lua_config, to=("out",), **extra):
        return super().spec({**lua_config, "record": "lazy"}, to, **extra)


if __name__ == "__main__":
    unittest.main(verbosity=2)
