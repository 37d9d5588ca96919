"""processor:parse through the real binaries (issue 38): a field parsed by
a regex's named groups, as JSON and as logfmt, into attributes or the top
level; what cannot be parsed is counted in errors and passed on or dropped;
a pattern that backtracks without end (`^(a+)+$` against a long line) fails
that record only, counted, while the instance goes on serving; a pattern
that does not compile, or names no group, is a 422 naming it; one the
interpreter runs (*NO_JIT) is bounded in memory too; a field of a
hundred thousand keys (issue 47) is refused past max_keys, and merged in
linear time under it, without the instance missing a heartbeat."""

import glob
import unittest

from harness import EngineTest, curl_post, free_port, ndjson, proc_status, read_ndjson, unobserved, wait_until
from hostile import SANITIZED


class Parse(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 100\n")
        self.port = free_port()

    def put(self, config):
        nodes = {"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["p"]},
                 "p": {"type": "processor:parse", "config": config, "to": ["out"]},
                 "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out.ndjson"}}}
        return self.admin.http("PUT", "/api/v1/groups/default/pipelines/p",
                               body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)

    def send(self, records):
        status, body, _, head = curl_post(self.port, "/", ndjson(records), "application/x-ndjson")
        self.assertEqual(status, 200, (body, head))

    def out(self, count):
        return wait_until(lambda: (lambda rows: rows if len(rows) >= count else None)(
            unobserved(r for path in glob.glob(f"{self.engine.out_dir}/out.ndjson") for r in read_ndjson(path))), 10,
            f"{count} records out")

    def counters(self, want_errors):
        return wait_until(lambda: (lambda n: n if n.get("errors", 0) >= want_errors else None)(
            ((self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")[1].get("instances") or [{}])[0]
             .get("nodes") or {}).get("p", {})), 10,
            f"{want_errors} errors counted")

    def test_regex_named_groups_into_attributes_and_a_line_that_does_not_match_passes_counted(self):
        status, body, _ = self.put({"format": "regex",
                                    "pattern": r"^(?<method>[A-Z]+) (?<path>\S+) (?<status>\d+)(?: (?<took>\S+))?$"})
        self.assertEqual(status, 200, body)
        self.send([{"n": 0, "body": "GET /a 200 3ms", "attributes": {"host": "x", "path": "old"}},
                   {"n": 1, "body": "POST /b 500"},
                   {"n": 2, "body": "not a request line"},
                   {"n": 3, "body": 42}])
        rows = sorted(self.out(4), key=lambda r: r["n"])
        self.assertEqual(rows[0]["attributes"], {"host": "x", "path": "/a", "method": "GET", "status": "200",
                                                 "took": "3ms"})
        self.assertEqual(rows[0]["body"], "GET /a 200 3ms", "keep_original: true")
        self.assertEqual(rows[1]["attributes"], {"method": "POST", "path": "/b", "status": "500"},
                         "an optional group that did not take part is not set")
        self.assertEqual(rows[2], {"n": 2, "body": "not a request line"}, "on_error pass: as it was")
        self.assertEqual(rows[3], {"n": 3, "body": 42})
        self.assertEqual(self.counters(2)["errors"], 2)
        self.engine.wait_log(r"record failed node=p reason=\"regex: no match")

    def test_json_into_the_top_level_without_the_original_and_bad_json_dropped(self):
        status, body, _ = self.put({"format": "json", "field": "message", "into": "root", "keep_original": False,
                                    "on_error": "drop"})
        self.assertEqual(status, 200, body)
        self.send([{"n": 0, "message": '{"level": "warn", "n": 10, "ctx": {"user": "u", "ids": [1, 2]}}'},
                   {"n": 1, "message": "{not json"},
                   {"n": 2, "message": "[1, 2]"},
                   {"n": 3, "message": '{"fine": true}'}])
        rows = self.out(2)
        self.assertEqual(sorted(rows, key=lambda r: r["n"]),
                         [{"n": 3, "fine": True}, {"n": 10, "level": "warn", "ctx": {"user": "u", "ids": [1, 2]}}],
                         "a parsed field replaces one of the same name; message removed; the bad two dropped")
        node = self.counters(2)
        self.assertEqual((node["errors"], node["records_dropped"]), (2, 2))

    def restarts(self):
        return [i["restarts"] for i in self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")[1]
                ["instances"]]

    def test_a_hundred_thousand_keys_are_refused_past_max_keys_and_merged_in_linear_time(self):
        pairs = " ".join(f"k{n}=v{n}" for n in range(100000))  # ~1.3 MB: one request
        wide = "{" + ",".join(f'"j{n}": {n}' for n in range(100000)) + "}"
        #  Heartbeats as deployed (1 s, killed after 3 missed): a quadratic
        #  merge of 100,000 keys took far longer.
        self.engine.stop()
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 1000\n")
        status, body, _ = self.put({"format": "logfmt"})
        self.assertEqual(status, 200, body)
        self.send([{"n": 0, "body": pairs}, {"n": 1, "body": "a=1"}])
        rows = sorted(self.out(2), key=lambda r: r["n"])
        self.assertEqual(rows[0], {"n": 0, "body": pairs}, "past max_keys (1000): passed on unparsed")
        self.assertEqual(rows[1]["attributes"], {"a": "1"})
        self.assertEqual(self.counters(1)["errors"], 1)
        self.engine.wait_log(r"logfmt: 100000 keys, more than max_keys \(1000\)")
        #  Allowed, a hundred thousand keys merge in linear time: three records
        #  of them (each with keys of its own to replace) within a heartbeat's
        #  reach.
        status, body, _ = self.put({"format": "logfmt", "max_keys": 200000, "field": "line"})
        self.assertEqual(status, 200, body)
        attributes = {f"k{n}": "old" for n in range(0, 100000, 2)}
        for n in range(3):
            self.send([{"n": n, "line": pairs, "attributes": attributes}])
        status, body, _ = self.put({"format": "json", "max_keys": 200000, "into": "root", "field": "line"})
        self.assertEqual(status, 200, body)
        self.send([{"n": 3, "line": wide}])
        rows = self.out(6)
        merged = next(r for r in rows if r.get("n") == 0 and "line" in r)
        self.assertEqual(len(merged["attributes"]), 100000)
        self.assertEqual(merged["attributes"]["k2"], "v2", "the parsed value replaces the one there")
        self.assertEqual(next(r for r in rows if r.get("n") == 3)["j99999"], 99999)
        self.assertEqual(self.restarts(), [0], "no heartbeat missed")

    def test_a_pattern_run_by_the_interpreter_is_bounded_in_memory_too(self):
        #  (*NO_JIT): no JIT stack to bound it. Against 20 KB this pattern's
        #  backtracking takes 329 MB in the interpreter; the heap limit fails
        #  the match at 20 MiB, counted, and the instance goes on.
        status, body, _ = self.put({"format": "regex",
                                    "pattern": "(*NO_JIT)^(?<all>(?:" + "(" * 20 + "a|b" + ")" * 20 + ")*)$"})
        self.assertEqual(status, 200, body)
        self.send([{"n": 0, "body": "ab" * 10000 + "c"}, {"n": 1, "body": "ab"}])
        rows = sorted(self.out(2), key=lambda r: r["n"])
        self.assertEqual(rows[0], {"n": 0, "body": "ab" * 10000 + "c"}, "failed: passed on as it was")
        self.assertIn("attributes", rows[1], "a match within the bounds")
        self.engine.wait_log(r"regex: the match needed too much memory")
        self.assertEqual(self.restarts(), [0])
        (pid,) = list(self.engine.instances().values())
        if not SANITIZED:  # ASan keeps what is freed in quarantine: the peak says nothing
            self.assertLess(int(proc_status(pid, "VmHWM").split()[0]), 150 * 1024, "never near the 329 MB")

    def test_logfmt_pairs_quoted_values_and_bare_keys_merge_into_attributes(self):
        status, body, _ = self.put({"format": "logfmt"})
        self.assertEqual(status, 200, body)
        self.send([{"body": 'level=info msg="hello \\"world\\"" took=3ms empty= debug', "attributes": {"x": 1}},
                   {"body": 'msg="never ends'}])
        rows = self.out(2)
        parsed = [r for r in rows if "attributes" in r and "level" in r["attributes"]]
        self.assertEqual(parsed[0]["attributes"], {"x": 1, "level": "info", "msg": 'hello "world"', "took": "3ms",
                                                   "empty": "", "debug": True})
        self.counters(1)
        self.engine.wait_log(r"logfmt: the quoted value of .msg. does not end")

    def test_a_catastrophic_regex_fails_its_record_and_the_instance_keeps_serving(self):
        status, body, _ = self.put({"format": "regex", "pattern": r"^(?<all>(a+)+)$"})
        self.assertEqual(status, 200, body)
        evil = "a" * 5000 + "b"
        for round_ in range(3):
            self.send([{"n": round_ * 2, "body": evil}, {"n": round_ * 2 + 1, "body": "aaaa"}])
        rows = sorted(self.out(6), key=lambda r: r["n"])
        self.assertEqual([r.get("attributes", {}).get("all") for r in rows], [None, "aaaa"] * 3)
        self.assertEqual(self.counters(3)["errors"], 3)
        self.engine.wait_log(r"regex: the match limit was reached")

    def test_a_pattern_that_does_not_compile_or_names_nothing_is_refused_with_the_spec(self):
        status, body, _ = self.put({"format": "regex", "pattern": "(?<open>abc"})
        self.assertEqual(status, 422, body)
        self.assertIn("nodes.p.config.pattern", str(body))
        self.assertIn("does not compile at offset", str(body))
        status, body, _ = self.put({"format": "regex", "pattern": "(abc)"})
        self.assertEqual(status, 422, body)
        self.assertIn("has no named group", str(body))
        status, body, _ = self.put({"format": "json", "pattern": "x"})
        self.assertEqual(status, 422, body)
        self.assertIn("only with format regex", str(body))


if __name__ == "__main__":
    unittest.main()
