"""OTTL conditions (docs/ottl.md; issue 53, its first part) through the real
binaries: conditions as the Collector's filter processor documentation
writes them, each in a processor:filter of its own fed the same OTLP/HTTP
logs (posted with curl), what each keeps read back from its file; a
processor:route by condition; refusals with their offsets and a
did-you-mean; a catastrophic pattern that stalls nothing; error_mode."""

import json
import os
import time
import unittest

from harness import EngineTest, curl_post, free_port, read_ndjson, wait_until

LOGS = [  # body, severity_number, severity_text, attributes, resource attributes
    ("GET /index.html 200", 9, "INFO", {"http.request.method": "GET", "team": "web"}, {"service.name": "front"}),
    ("user password=hunter2 rejected", 13, "WARN", {"team": "auth"}, {"service.name": "auth"}),
    ("debug: cache warm", 5, "DEBUG", {}, {"service.name": "cache", "k8s.pod.name": "my-pod-name-7d9"}),
    ("AUDIT login ok", 9, "INFO", {"team": "pay", "retries": 3}, {"service.name": "pay"}),
    ('{"msg":"json body"}', 17, "ERROR", {"team": "pay"}, {"service.name": "pay"}),
]

# (condition, bodies the filter drops): the Collector's filter processor drops what a condition meets.
CASES = [
    ('IsMatch(body, ".*password.*")', {1}),
    ("severity_number < SEVERITY_NUMBER_WARN", {0, 2, 3}),
    ('log.severity_text == "DEBUG"', {2}),
    ('resource.attributes["service.name"] == "pay"', {3, 4}),
    ('attributes["http.request.method"] == nil', {1, 2, 3, 4}),
    ('IsMatch(resource.attributes["k8s.pod.name"], "my-pod-name.*")', {2}),
    ('severity_number >= SEVERITY_NUMBER_WARN and not IsMatch(body, "(?i)password")', {4}),
    ('attributes["team"] == "pay" or attributes["team"] == "web"', {0, 3, 4}),
    ('not (attributes["team"] == "pay")', {0, 1, 2}),
    ('IsMatch(body, "^\\\\{")', {4}),
    ('Len(body) > 25', {1}),
    ('attributes["retries"] > 2', {3}),
    ('HasPrefix(ToLowerCase(body), "audit")', {3}),
    ('IsString(attributes["team"]) and Concat([attributes["team"], "x"], "-") == "auth-x"', {1}),
    ('instrumentation_scope.name == "checkout"', {0, 1, 2, 3, 4}),
    ('Substring(body, 0, 5) == "debug"', {2}),
    ('IsMap(attributes) and Len(attributes) == 0', {2}),
    ('severity_number == 13 or severity_number == 17', {1, 4}),
    ('Int("42") == 42 and Double(attributes["retries"]) == 3.0', {3}),
    ('String(severity_number) == "9"', {0, 3}),
]


def otlp_logs():
    records = []
    for body, number, text, attrs, _ in LOGS:
        records.append({"body": {"stringValue": body}, "severityNumber": number, "severityText": text,
                        "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int)
                                        else {"stringValue": v}} for k, v in attrs.items()]})
    by_resource = {}
    for record, (_, _, _, _, resource) in zip(records, LOGS):
        by_resource.setdefault(json.dumps(resource, sort_keys=True), []).append(record)
    return {"resourceLogs": [{
        "resource": {"attributes": [{"key": k, "value": {"stringValue": v}} for k, v in json.loads(r).items()]},
        "scopeLogs": [{"scope": {"name": "checkout"}, "logRecords": recs}]} for r, recs in by_resource.items()]}


# Statements as the Collector's transform processor documentation writes
# them, on two log records; what each record is afterwards (body,
# attributes, severity_text).
STATEMENT_LOGS = [
    ('{"user":"ann","tmp_id":7}', 13, "", {"http.method": "GET", "password": "pw", "tmp_x": "1", "note": "secret=abc"},
     {"k8s.namespace.name": "shop"}),
    ("login token=Zx81 ok", 9, "", {"http.route": "/a", "env": "dev", "a": "x", "b": "y"},
     {"k8s.namespace.name": "ops"}),
]
STATEMENTS = [
    ('set(attributes["env"], "prod") where resource.attributes["k8s.namespace.name"] == "shop"',
     [("attributes", "env", "prod"), ("attributes", "env", "dev")]),
    ('replace_pattern(body, "token=[A-Za-z0-9]+", "token=***")',
     [("body", None, '{"user":"ann","tmp_id":7}'), ("body", None, "login token=*** ok")]),
    ('merge_maps(attributes, ParseJSON(body), "upsert") where IsMatch(body, "^\\\\{")',
     [("attributes", "user", "ann"), ("attributes", "user", None)]),
    ('keep_keys(attributes, ["http.method", "http.route", "env"])',
     [("attributes", None, {"http.method": "GET"}), ("attributes", None, {"http.route": "/a", "env": "dev"})]),
    ('delete_key(attributes, "password")', [("attributes", "password", None), ("attributes", "env", "dev")]),
    ('delete_matching_keys(attributes, "^tmp_")', [("attributes", "tmp_x", None), ("attributes", "a", "x")]),
    ('keep_matching_keys(attributes, "^http")',
     [("attributes", None, {"http.method": "GET"}), ("attributes", None, {"http.route": "/a"})]),
    ('truncate_all(attributes, 2)', [("attributes", "http.method", "GE"), ("attributes", "http.route", "/a")]),
    ('replace_all_patterns(attributes, "value", "secret=\\\\w+", "secret=***")',
     [("attributes", "note", "secret=***"), ("attributes", "env", "dev")]),
    ('set(severity_text, "WARN") where severity_number >= SEVERITY_NUMBER_WARN and severity_number < 17',
     [("severity_text", None, "WARN"), ("severity_text", None, "")]),
    ('set(body, Concat([attributes["a"], attributes["b"]], "-")) where attributes["a"] != nil',
     [("body", None, '{"user":"ann","tmp_id":7}'), ("body", None, "x-y")]),
    ('set(attributes["lower"], ToLowerCase(attributes["http.method"]))',
     [("attributes", "lower", "get"), ("attributes", "lower", None)]),
    ('merge_maps(attributes, ParseKeyValue("user=ann role=\'admin\'"), "upsert")',
     [("attributes", "role", "admin"), ("attributes", "user", "ann")]),
    ('merge_maps(attributes, ExtractPatterns(body, "^(?P<verb>[a-z]+) (?P<rest>.*)$"), "upsert")',
     [("attributes", "verb", None), ("attributes", "rest", "token=Zx81 ok")]),
    ('set(attributes["parts"], Split(attributes["http.route"], "/")) where attributes["http.route"] != nil',
     [("attributes", "parts", None), ("attributes", "parts", ["", "a"])]),
    ('set(attributes["hash"], SHA256("x"))',
     [("attributes", "hash", "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881")] * 2),
    ('limit(attributes, 2, ["password"])',
     [("attributes", None, {"password": "pw", "http.method": "GET"}),
      ("attributes", None, {"http.route": "/a", "env": "dev"})]),
    (['set(attributes["n"], ParseJSON("{\\"a\\":{\\"b\\":1},\\"c\\":[2]}"))', 'flatten(attributes, "f")'],
     [("attributes", "f.n.a.b", 1), ("attributes", "f.n.c.0", 2)]),
    (['set(attributes["t"], Now())', 'set(attributes["recent"], attributes["t"] > 1700000000000000000)'],
     [("attributes", "recent", True)] * 2),
    (['merge_maps(cache, ParseJSON(body), "upsert") where IsMatch(body, "^\\\\{")',
      'set(attributes["who"], cache["user"])', 'set(cache["x"], "y")'],
     [("attributes", "who", "ann"), ("attributes", "who", None)]),
]


def statement_logs():
    out = []
    for body, number, text, attrs, resource in STATEMENT_LOGS:
        out.append({"resource": {"attributes": [{"key": k, "value": {"stringValue": v}} for k, v in resource.items()]},
                    "scopeLogs": [{"logRecords": [{
                        "body": {"stringValue": body}, "severityNumber": number, "severityText": text,
                        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}]}]})
    return {"resourceLogs": out}


class Ottl(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.port = free_port()
        self.out = self.engine.out_dir

    def put(self, nodes, expect=200):
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/o",
                                          body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
        self.assertEqual(status, expect, body)
        return body

    def post(self):
        status, body, _, _ = curl_post(self.port, "/v1/logs", json.dumps(otlp_logs()).encode(), "application/json")
        self.assertEqual(status, 200, body)

    def test_the_collectors_filter_conditions_drop_what_its_documentation_says(self):
        nodes = {"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"},
                        "to": [f"f{i}" for i in range(len(CASES))]}}
        for i, (condition, _) in enumerate(CASES):
            nodes[f"f{i}"] = {"type": "processor:filter", "config": {"conditions": [condition]}, "to": [f"o{i}"]}
            nodes[f"o{i}"] = {"type": "exporter:file", "config": {"path": f"{self.out}/f{i}.ndjson"}}
        self.put(nodes)
        self.post()
        bodies = [b for b, *_ in LOGS]
        for i, (condition, dropped) in enumerate(CASES):
            expected = [b for k, b in enumerate(bodies) if k not in dropped]
            if expected:
                got = wait_until(lambda: (lambda r: r if len(r) >= len(expected) else None)(
                    read_ndjson(f"{self.out}/f{i}.ndjson")), 20, f"what {condition} keeps")
            else:  # nothing kept: the others arrived (the same input), this one wrote nothing
                wait_until(lambda: read_ndjson(f"{self.out}/f0.ndjson"), 20, "the first filter's records")
                got = read_ndjson(f"{self.out}/f{i}.ndjson")
            self.assertEqual([r["body"] for r in got], expected, f"case {i}: {condition}")

    def test_the_collectors_transform_statements_do_what_its_documentation_says(self):
        nodes = {"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"},
                        "to": [f"t{i}" for i in range(len(STATEMENTS))]}}
        for i, (statement, _) in enumerate(STATEMENTS):
            statements = statement if isinstance(statement, list) else [statement]
            nodes[f"t{i}"] = {"type": "processor:transform", "config": {"statements": statements}, "to": [f"o{i}"]}
            nodes[f"o{i}"] = {"type": "exporter:file", "config": {"path": f"{self.out}/t{i}.ndjson"}}
        self.put(nodes)
        status, body, _, _ = curl_post(self.port, "/v1/logs", json.dumps(statement_logs()).encode(),
                                       "application/json")
        self.assertEqual(status, 200, body)
        for i, (statement, expected) in enumerate(STATEMENTS):
            got = wait_until(lambda: (lambda r: r if len(r) == 2 else None)(read_ndjson(f"{self.out}/t{i}.ndjson")),
                             20, f"what {statement} makes")
            for record in got:
                self.assertNotIn("cache", record, "cache[...] is the statements' alone, never the record's")
            for record, (field, key, value) in zip(got, expected):
                where = record.get(field, {} if key else None)
                actual = (where or {}).get(key) if key else where
                if field == "severity_text" and actual is None:
                    actual = ""
                self.assertEqual(actual, value, f"case {i}: {statement}: {record}")

    def test_route_by_condition(self):
        self.put({"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["r"]},
                  "r": {"type": "processor:route", "config": {"routes": [
                      {"condition": 'attributes["team"] == "pay"', "to": ["pay"]},
                      {"condition": 'severity_number >= SEVERITY_NUMBER_WARN', "to": ["loud"]}],
                      "default": ["rest"]}},
                  "pay": {"type": "exporter:file", "config": {"path": f"{self.out}/pay.ndjson"}},
                  "loud": {"type": "exporter:file", "config": {"path": f"{self.out}/loud.ndjson"}},
                  "rest": {"type": "exporter:file", "config": {"path": f"{self.out}/rest.ndjson"}}})
        self.post()
        pay = wait_until(lambda: (lambda r: r if len(r) == 2 else None)(read_ndjson(f"{self.out}/pay.ndjson")), 20,
                         "the pay route")
        self.assertEqual([r["body"] for r in pay], [LOGS[3][0], LOGS[4][0]])
        loud = wait_until(lambda: read_ndjson(f"{self.out}/loud.ndjson"), 20, "the loud route")
        self.assertEqual([r["body"] for r in loud], [LOGS[1][0]])
        rest = wait_until(lambda: (lambda r: r if len(r) == 2 else None)(read_ndjson(f"{self.out}/rest.ndjson")),
                          20, "the default")
        self.assertEqual([r["body"] for r in rest], [LOGS[0][0], LOGS[2][0]])

    def test_refusals_name_the_offset_and_a_close_name(self):
        for condition, said in [
                ('attributes["a"] = "b"', "at offset 16: '=': did you mean '=='?"),
                ('IsMach(body, "x")', "IsMach: no such converter (did you mean IsMatch?)"),
                ('atributes["a"] == "b"', "atributes: no such path (did you mean attributes?)"),
                ('severity_number < ', "at offset 18: a value expected, found the end"),
                ('IsMatch(body, "(unclosed")', "IsMatch's pattern"),
                ('"just a string"', "a condition must be true or false"),
                ('IsMatch(body)', "IsMatch takes 2 arguments, not 1"),
                ('IsMatch(body, "\\d+")', "\\d is not an escape (a pattern's \\d is written \\\\d)")]:
            body = self.put({"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"},
                                    "to": ["f"]},
                             "f": {"type": "processor:filter", "config": {"conditions": [condition]}, "to": ["o"]},
                             "o": {"type": "exporter:file", "config": {"path": f"{self.out}/x.ndjson"}}}, expect=422)
            text = json.dumps(body)
            self.assertIn("nodes.f.config.conditions[0]", text, condition)
            self.assertIn(json.dumps(said)[1:-1], text, condition)

    def test_statements_refused_name_the_offset_and_a_close_name(self):
        for statement, said in [
                ('Set(attributes["a"], "b")', "Set: no such editor (did you mean set?)"),
                ('set(attributes["a"])', "set takes 2 arguments, not 1"),
                ('set("a", "b")', "set's target must be a path"),
                ('IsMatch(body, "x")', "IsMatch is a converter: a statement begins with an editor"),
                ('set(attributes["a"], "b") where', "a value expected, found the end"),
                ('set(attributes["a"], "b") when true', "'when': where or the end expected")]:
            body = self.put({"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"},
                                    "to": ["t"]},
                             "t": {"type": "processor:transform", "config": {"statements": [statement]}, "to": ["o"]},
                             "o": {"type": "exporter:file", "config": {"path": f"{self.out}/x.ndjson"}}}, expect=422)
            text = json.dumps(body)
            self.assertIn("nodes.t.config.statements[0]", text, statement)
            self.assertIn(json.dumps(said)[1:-1], text, statement)

    def test_hostile_statements_at_the_api_are_refused_whole(self):
        # Through the admin API: refused with what is wrong, nothing applied,
        # droverd unmoved; a keep_keys of many keys is fine.
        def spec(statements=None, conditions=None):
            node = ({"type": "processor:transform", "config": {"statements": statements}, "to": ["o"]} if statements
                    else {"type": "processor:filter", "config": {"conditions": conditions}, "to": ["o"]})
            return {"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["t"]},
                    "t": node, "o": {"type": "exporter:file", "config": {"path": f"{self.out}/h.ndjson"}}}
        for hostile, said in [
                ({"conditions": ["(" * 100000 + "true" + ")" * 100000]}, "nested deeper than 32"),
                ({"conditions": ["not " * 100000 + "true"]}, "nested deeper than 32"),
                ({"conditions": ['attributes' + '["a"]' * 10000 + ' == "x"']}, "a path of more than 8 keys"),
                ({"statements": ['set(attributes["a"], Concat([' + ",".join(['"a"'] * 10000) + '], ""))']},
                 "a list of more than 64 items"),
                ({"statements": ['set(attributes["a"], "\\q")']}, "\\q")]:
            text = json.dumps(self.put(spec(**hostile), expect=422))
            self.assertIn(said, text, str(hostile)[:80])
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/o", raw_body=(
            b'{"pipeline": {"nodes": {"t": {"type": "processor:filter", "config": {"conditions": '
            b'["body == \"\xff\xfe\""]}}}}}'), timeout=30)
        self.assertEqual(status, 400, body)  # not UTF-8: not JSON, named as such
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/o")[0], 404, "nothing applied")
        keys = [f"k{i}" for i in range(40)]
        self.put(spec(statements=["keep_keys(attributes, [" + ", ".join(f'"{k}"' for k in keys) + "])"]))
        self.assertEqual(self.admin.http("GET", "/readyz")[0], 200)

    def test_droverctl_validate_refuses_offline_with_the_offset(self):
        import subprocess
        import tempfile

        from harness import BIN
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"pipeline": {"cores": {"count": 1}, "nodes": {
                "in": {"type": "receiver:http", "config": {"endpoint": "127.0.0.1:1"}, "to": ["t"]},
                "t": {"type": "processor:transform", "config": {"statements": [
                    'set(attributes["a"], "b")', 'keep_keys(attributes, ["a"]) were true']}, "to": ["o"]},
                "o": {"type": "exporter:null"}}}}, f)
        out = subprocess.run([f"{BIN}/droverctl", "validate", "-f", f.name], capture_output=True, text=True,
                             timeout=10, env=dict(os.environ, DROVER_ADMIN="ipc:///nonexistent/admin.sock"))
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("nodes.t.config.statements[1]", out.stdout + out.stderr)
        self.assertIn("at offset 29: 'were': where or the end expected", out.stdout + out.stderr)

    def test_droverctl_explain_lists_every_function(self):
        import subprocess

        from harness import BIN
        text = subprocess.run([f"{BIN}/droverctl", "explain", "processor:transform.statements"], capture_output=True,
                              text=True, check=True, timeout=10).stdout
        for name in ("set", "delete_key", "delete_matching_keys", "keep_keys", "keep_matching_keys", "truncate_all",
                     "replace_pattern", "replace_all_patterns", "merge_maps", "IsMatch", "IsString", "IsMap",
                     "IsList", "IsInt", "IsDouble", "IsBool", "Len", "Int", "Double", "String", "ToLowerCase",
                     "ToUpperCase", "Concat", "Substring", "HasPrefix", "HasSuffix", "ParseJSON", "ParseKeyValue",
                     "ExtractPatterns", "Split", "SHA256", "Now", "limit", "flatten"):
            self.assertIn(f"`{name}", text, name)
        filter_text = subprocess.run([f"{BIN}/droverctl", "explain", "processor:filter.conditions"],
                                     capture_output=True, text=True, check=True, timeout=10).stdout
        self.assertIn("`IsMatch(target", filter_text)

    def test_a_catastrophic_pattern_stalls_nothing_and_error_mode_counts(self):
        nodes = {"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["f", "g"]},
                 "f": {"type": "processor:filter", "config": {"conditions": ['IsMatch(body, "(a+)+$")']},
                       "to": ["o"]},
                 "g": {"type": "processor:filter", "config": {"error_mode": "silent",
                                                             "conditions": ['IsMatch(body, "(a+)+$")']}, "to": ["p"]},
                 "o": {"type": "exporter:file", "config": {"path": f"{self.out}/o.ndjson"}},
                 "p": {"type": "exporter:file", "config": {"path": f"{self.out}/p.ndjson"}}}
        self.put(nodes)
        evil = "a" * 40 + "!"
        logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": evil}},
                                                                 {"body": {"stringValue": "aaa"}}]}]}]}
        start = time.monotonic()
        status, body, _, _ = curl_post(self.port, "/v1/logs", json.dumps(logs).encode(), "application/json")
        self.assertEqual(status, 200, body)
        kept = wait_until(lambda: read_ndjson(f"{self.out}/o.ndjson"), 20, "the record the match gave up on")
        self.assertLess(time.monotonic() - start, 10 * 1.0, "the match was bounded")
        self.assertEqual([r["body"] for r in kept], [evil], "propagate: handed on as it came; 'aaa' dropped")
        self.assertEqual([r["body"] for r in wait_until(lambda: read_ndjson(f"{self.out}/p.ndjson"), 20, "silent")],
                         [evil])

        def nodes_status():
            status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/o/status")
            return (body.get("instances") or [{}])[0].get("nodes") or {}
        counted = wait_until(lambda: (lambda n: n if n.get("f", {}).get("errors") == 1 else None)(nodes_status()),
                             10, "the error counted by propagate")
        self.assertEqual(counted["g"].get("errors", 0), 0, "silent counts nothing")
        self.engine.wait_log(r"IsMatch: the match went past its bounds", 10)


if __name__ == "__main__":
    unittest.main()
