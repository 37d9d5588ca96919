"""Record paths (docs/operations.md, "Record paths"; issue 38) through the
real binaries: an OTLP request posted with curl has one attribute renamed,
a resource attribute set and another attribute deleted by
processor:transform, is kept by processor:filter on a resource attribute
and routed by processor:route on scope.name — no Lua; a plain name with
dots is still one top-level field; a path that does not parse is a 422."""

import glob
import json
import unittest

from harness import EngineTest, curl_post, free_port, read_ndjson, unobserved, wait_until


def otlp(records):
    return json.dumps({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeLogs": [{"scope": {"name": scope}, "logRecords": [{
            "body": {"stringValue": body},
            "attributes": [{"key": "http.method", "value": {"stringValue": "GET"}},
                           {"key": "secret", "value": {"stringValue": "s3cr3t"}}]}]}]}
        for service, scope, body in records]}).encode()


class RecordPaths(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.port = free_port()

    def file(self, name):
        return {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/{name}.ndjson"}}

    def rows(self, name):
        return [r for p in glob.glob(f"{self.engine.out_dir}/{name}.ndjson") for r in read_ndjson(p)]

    def put(self, nodes):
        return self.admin.http("PUT", "/api/v1/groups/default/pipelines/p",
                               body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)

    def test_an_otlp_attribute_renamed_filtered_and_routed_without_lua(self):
        status, body, _ = self.put({
            "in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["t"]},
            "t": {"type": "processor:transform", "config": {
                "set": {'resource["deployment.environment"]': "prod"},
                "rename": {'attributes["http.method"]': 'attributes["http.request.method"]'},
                "delete": ['attributes["secret"]']}, "to": ["f"]},
            "f": {"type": "processor:filter", "config": {"field": 'resource["service.name"]', "op": "eq",
                                                         "value": "shop"}, "to": ["r"]},
            "r": {"type": "processor:route", "config": {
                "routes": [{"when": {"field": "scope.name", "op": "eq", "value": "db"}, "to": ["db"]}],
                "default": ["rest"]}},
            "db": self.file("db"), "rest": self.file("rest")})
        self.assertEqual(status, 200, body)
        status, body, _, _ = curl_post(self.port, "/v1/logs", otlp([("shop", "db", "a"), ("shop", "http", "b"),
                                                                    ("other", "db", "c")]), "application/json")
        self.assertEqual(status, 200, body)
        db = wait_until(lambda: self.rows("db"), 10, "the db record")
        rest = wait_until(lambda: self.rows("rest"), 10, "the other shop record")
        self.assertEqual([r["body"] for r in db], ["a"])
        self.assertEqual([r["body"] for r in rest], ["b"], "service other filtered out")
        self.assertEqual(db[0]["attributes"], {"http.request.method": "GET"})
        self.assertEqual(db[0]["resource"], {"service.name": "shop", "deployment.environment": "prod"})

    def test_a_plain_name_with_dots_is_one_top_level_field_and_bad_paths_are_refused(self):
        status, body, _ = self.put({
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"rename": {"http.method": "method"}}, "to": ["out"]},
            "out": self.file("out")})
        self.assertEqual(status, 200, body)
        status, body, _, _ = curl_post(self.port, "/", b'{"http.method": "GET", "attributes": {"http.method": "x"}}\n',
                                       "application/x-ndjson")
        self.assertEqual(status, 200, body)
        rows = wait_until(lambda: self.rows("out"), 10, "the record")
        self.assertEqual(unobserved(rows)[0], {"method": "GET", "attributes": {"http.method": "x"}})
        status, body, _ = self.put({
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["f"]},
            "f": {"type": "processor:filter", "config": {"field": 'attributes["open', "op": "exists"}, "to": ["out"]},
            "out": self.file("out")})
        self.assertEqual(status, 422, body)
        self.assertIn("nodes.f.config.field", str(body))
        self.assertIn("does not end", str(body))
        status, body, _ = self.put({
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"delete": ['attributes[x]']}, "to": ["out"]},
            "out": self.file("out")})
        self.assertEqual(status, 422, body)
        self.assertIn('expected ["key"]', str(body))


if __name__ == "__main__":
    unittest.main()
