"""processor:route through the real binaries: each record goes to the
targets of the first route it matches, else to default, else nowhere; fan
out to several targets; route targets are edges of the DAG, checked like
`to` (they exist, take input, make no cycle), and bad routes are a 422
naming the route."""

import glob
import os
import unittest

from harness import EngineTest, curl_post, free_port, read_ndjson, wait_until


class Route(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.port = free_port()

    def file(self, name):
        return {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/{name}-{{core}}.ndjson"}}

    def rows(self, name):
        found = []
        for path in glob.glob(f"{self.engine.out_dir}/{name}-*.ndjson"):
            found += read_ndjson(path)
        return found

    def put(self, route, **extra):
        nodes = {"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["r"]},
                 "r": {"type": "processor:route", "config": route}, **extra}
        return self.admin.http("PUT", "/api/v1/groups/default/pipelines/p",
                               body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}})

    def test_first_matching_route_wins_fans_out_and_the_rest_goes_to_default_or_nowhere(self):
        status, body, _ = self.put({"routes": [
            {"when": {"field": "level", "op": "ge", "value": 5}, "to": ["errors", "all"]},
            {"when": {"field": "path", "op": "eq", "value": "/healthz"}, "to": ["health"]},
            {"when": {"field": "level", "op": "ge", "value": 3}, "to": ["all"]}], "default": ["rest"]},
            errors=self.file("errors"), all=self.file("all"), health=self.file("health"), rest=self.file("rest"))
        self.assertEqual(status, 200, body)
        lines = b"".join(b'{"n": %d, "level": %d, "path": "%s"}\n' % (n, n % 7, b"/healthz" if n % 4 == 0 else b"/")
                         for n in range(70))
        status, body, _, _ = curl_post(self.port, "/", lines, "application/x-ndjson")
        self.assertEqual(status, 200, body)

        def expect(n):
            level, health = n % 7, n % 4 == 0
            if level >= 5:
                return {"errors", "all"}
            if health:
                return {"health"}
            return {"all"} if level >= 3 else {"rest"}
        wanted = {name: sorted(n for n in range(70) if name in expect(n)) for name in ("errors", "all", "health", "rest")}
        got = wait_until(lambda: (lambda g: g if g == wanted else None)(
            {name: sorted(r["n"] for r in self.rows(name)) for name in wanted}), 10, "every record where it belongs")
        self.assertEqual(got, wanted)

    def test_unmatched_records_without_default_go_nowhere(self):
        status, body, _ = self.put({"routes": [{"when": {"field": "keep", "op": "exists"}, "to": ["out"]}]},
                                   out=self.file("out"))
        self.assertEqual(status, 200, body)
        status, body, _, _ = curl_post(self.port, "/", b'{"n": 1}\n{"n": 2, "keep": true}\n{"n": 3}\n',
                                       "application/x-ndjson")
        self.assertEqual(status, 200, body)
        wait_until(lambda: [r["n"] for r in self.rows("out")] == [2], 10, "only the kept record")

        def counted():
            body = self.admin.http("GET", "/metrics")[1]
            text = body if isinstance(body, str) else body.decode()
            labels = '{group="default",pipeline="p",node="r",generation="1"}'
            return all(f"drover_node_{name}_total{labels} {value}\n" in text
                       for name, value in (("records_in", 3), ("records_out", 1), ("records_dropped", 2), ("errors", 0)))
        wait_until(counted, 10, "the two unmatched records counted as dropped by the route node")

    def test_bad_routes_are_refused_naming_the_route(self):
        cases = [
            ({"routes": []}, {"out": self.file("out")}, "nodes.r.config.routes", "must be a non-empty list"),
            ({"routes": [{"when": {"field": "a", "op": "gte", "value": 1}, "to": ["out"]}]}, {"out": self.file("out")},
             "nodes.r.config.routes[0].when.op", "one of eq ne lt le gt ge exists"),
            ({"routes": [{"when": {"field": "a", "op": "eq"}, "to": ["out"]}]}, {"out": self.file("out")},
             "nodes.r.config.routes[0].when.value", "required unless op is exists"),
            ({"routes": [{"when": {"field": "a", "op": "exists"}, "to": []}]}, {"out": self.file("out")},
             "nodes.r.config.routes[0].to", "non-empty list"),
            ({"routes": [{"when": {"field": "a", "op": "exists"}, "to": ["nope"]}]}, {"out": self.file("out")},
             "nodes.r.config", 'dangling: no node "nope"'),
            ({"routes": [{"when": {"field": "a", "op": "exists"}, "to": ["in"]}], "default": ["out"]},
             {"out": self.file("out")}, "nodes.r.config", '"in" is a receiver'),
            ({"routes": [{"when": {"field": "a", "op": "exists"}, "to": ["back"]}], "default": ["out"]},
             {"out": self.file("out"), "back": {"type": "processor:filter",
                                                "config": {"field": "a", "op": "exists"}, "to": ["r"]}},
             "", "cycle through node"),
        ]
        for route, extra, path, words in cases:
            status, body, _ = self.put(route, **extra)
            self.assertEqual(status, 422, body)
            details = body["error"]["details"]
            self.assertTrue(any(d["path"].startswith(path) and words in d["message"] for d in details),
                            f"{path}: {words} not in {details}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
