"""The hostile suite for the surfaces added in the second round (issue 23):
scripts, OTLP/protobuf, dry runs, the receivers' connections, the event
stream, exporters' retries, secrets in specs, the watched config file,
histories. Each test names the finding it covers; each failed before its
fix. The first round's findings are in test_hostile.py and
test_hostile_admin.py."""

import glob
import json
import os
import re
import shutil
import tempfile
import unittest

from harness import EngineTest, curl_post, free_port, read_ndjson, wait_until
from hostile import SANITIZED, rss_kb


def ndjson(records):
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


class Scripts(EngineTest):
    """processor:lua: limits a script cannot defeat, files it may not name."""

    def setUp(self):
        self.data = tempfile.mkdtemp(prefix="drv-data-")
        self.addCleanup(shutil.rmtree, self.data, True)
        self.start_admin_engine(engine_extra=f"  data_dirs: [{self.data}]\n")
        self.port = free_port()

    def spec(self, lua_config):
        out = {"type": "exporter:file", "config": {"path": f"{self.data}/out-{{core}}-{{generation}}.ndjson"}}
        nodes = {"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}"}, "to": ["s"]},
                 "s": {"type": "processor:lua", "config": lua_config, "to": ["out"]}, "out": out}
        return {"pipeline": {"cores": {"count": 1}, "nodes": nodes}}

    def put(self, spec):
        return self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=spec)

    def send(self, records):
        status, body, _, _ = curl_post(self.port, "/", ndjson(records), "application/x-ndjson")
        self.assertEqual(status, 200, body)

    def rows(self):
        return [r for path in sorted(glob.glob(f"{self.data}/out-*.ndjson")) for r in read_ndjson(path)]

    def node_errors(self):
        text = self.admin.http("GET", "/metrics")[1]
        m = re.search(r'^drover_node_errors_total\{group="default",pipeline="p",node="s",[^}]*\} (\d+)$', text, re.M)
        return int(m.group(1)) if m else None

    def test_pcall_cannot_catch_the_instruction_limit(self):
        # Finding: the limit hook raised an ordinary error; a pcall loop took
        # it and ran on until the heartbeat kill (restarts, degraded).
        script = ("function process(r)\n"
                  "  if r.poison then\n"
                  "    while true do pcall(function() while true do end end) end\n"
                  "  end\n"
                  "  if r.handler then\n"
                  "    while true do xpcall(function() while true do end end, function(e) return e end) end\n"
                  "  end\n"
                  "  return r\n"
                  "end\n")
        self.assertEqual(self.put(self.spec({"script": script, "max_instructions": 100000}))[0], 200)
        pid = self.engine.wait_instances(["default/p@1#0"])["default/p@1#0"]
        self.send([{"poison": 1}, {"n": 1}, {"handler": 1}, {"n": 2}])
        wait_until(lambda: [r.get("n") for r in self.rows()] == [1, 2], 10, "the records after the poison ones")
        wait_until(lambda: self.node_errors() == 2, 10, "two records failed")
        log = self.engine.log_text()
        self.assertIn('reason="instruction limit reached (max_instructions 100000)"', log)
        self.assertEqual(self.engine.instances().get("default/p@1#0"), pid, "the instance was never killed")
        self.assertNotIn("heartbeats missed", log)

    def test_a_shared_table_is_copied_within_the_memory_limit(self):
        # Finding: t = {a = t, b = t} nested 23 levels was copied once per
        # reference in C, outside the allocator limit: 31 MB -> 1.08 GB.
        script = ("function process(r)\n"
                  "  if r.dag then\n"
                  "    local t = {x = 'leaf'}\n"
                  "    for i = 1, 23 do t = {a = t, b = t} end\n"
                  "    return t\n"
                  "  end\n"
                  "  return r\n"
                  "end\n")
        spec = self.spec({"script": script, "max_memory_bytes": 32 * 1024 * 1024})
        self.assertEqual(self.put(spec)[0], 200)
        pid = self.engine.wait_instances(["default/p@1#0"])["default/p@1#0"]
        self.send([{"dag": 1}, {"n": 1}])
        wait_until(lambda: [r.get("n") for r in self.rows()] == [1], 10, "the record after the DAG")
        self.engine.wait_log(r'record failed node=s reason="memory limit reached \(max_memory_bytes\) copying')
        self.assertEqual(self.engine.instances().get("default/p@1#0"), pid)
        if not SANITIZED:
            self.assertLess(rss_kb(pid), 200 * 1024, "the copy stayed within the limit")


if __name__ == "__main__":
    unittest.main()
