"""droverctl and specs as files, through the real binaries: diff shows a
script's change line by line and an added node as the YAML lines of its
config; the normalized spec shows the defaults an instance uses, and
spelling them out is no change; get -o yaml | apply -f - is a no-op;
validate checks files offline."""

import json
import os
import re
import shutil
import subprocess
import time
import unittest

from harness import BIN, free_port
from test_cli import PIPE, CliBase, spec


class CliSpecs(CliBase):
    def test_diff_shows_a_scripts_change_line_by_line(self):
        def lua(step):
            return {"pipeline": {"cores": {"count": 1}, "nodes": {
                "in": {"type": "receiver:generator", "config": {"rate": 10}, "to": ["step"]},
                "step": {"type": "processor:lua", "config": {
                    "script": "function process(r)\n  r.step = " + step + "\n  return r\nend\n"}, "to": ["out"]},
                "out": {"type": "exporter:null"}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/lua", body=lua("1"))[0], 200)
        changed = self.ctl("diff", "-f", "-", "default/lua", input=json.dumps(lua("2")))
        self.assertEqual(changed.returncode, 1, changed.stderr)
        self.assertIn("nodes.step.config.script: ", changed.stdout)
        self.assertIn("\n    @@ -1,4 +1,4 @@\n     function process(r)\n    -  r.step = 1\n    +  r.step = 2\n"
                      "       return r\n     end\n", changed.stdout)

    def test_diff_shows_an_added_node_as_the_yaml_lines_of_its_config(self):
        def spec_with(parse=None):
            nodes = {"in": {"type": "receiver:generator", "config": {"rate": 10}, "to": ["parse" if parse else "out"]},
                     "out": {"type": "exporter:null"}}
            if parse:
                nodes["parse"] = {"type": "processor:parse", "config": parse, "to": ["out"]}
            return {"pipeline": {"cores": {"count": 1}, "nodes": nodes}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/y", body=spec_with())[0], 200)
        regex = r"^(?P<host>\S+) (?P<user>\S+) \[(?P<time>[^\]]+)\] \"(?P<method>\S+) (?P<path>\S+)\" (?P<status>\d{3})$"
        changed = self.ctl("diff", "-f", "-", "default/y",
                           input=json.dumps(spec_with({"field": "message", "format": "regex", "pattern": regex})))
        self.assertEqual(changed.returncode, 1, changed.stderr)
        # The regex about to ship is shown, not "(N bytes of JSON)" alone.
        self.assertIn("nodes.parse: (none) -> ", changed.stdout)
        self.assertIn("    +type: processor:parse\n", changed.stdout)
        self.assertRegex(changed.stdout, r"\n    \+  pattern: .*\(\?P<method>")
        self.assertIn("    +  format: regex\n", changed.stdout)

    def test_the_normalized_spec_shows_the_defaults_an_instance_uses(self):
        http = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{free_port()}"}, "to": ["out"]},
            "out": {"type": "exporter:http", "config": {"endpoint": "http://127.0.0.1:9/x", "batch": {"max_records": 100}}}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/h", body=http)[0], 200)
        got = self.ctl("describe", "default/h", "-o", "json")
        config = json.loads(got.stdout)["spec"]["nodes"]["out"]["config"]
        self.assertEqual(config["batch"], {"max_records": 100, "max_bytes": 1048576, "max_delay_ms": 200})
        self.assertEqual(config["retry"], {"initial_ms": 100, "max_ms": 5000, "max_elapsed_secs": 300})
        self.assertEqual(config["tls"], {"insecure_skip_verify": False})
        # Spelling the defaults out is no change.
        spelled = json.loads(json.dumps(http))
        spelled["pipeline"]["nodes"]["out"]["config"].update(retry={"initial_ms": 100}, batch=config["batch"])
        same = self.ctl("diff", "-f", "-", "default/h", input=json.dumps(spelled))
        self.assertEqual((same.returncode, same.stdout.strip()), (0, "no changes: the running spec is the file's"))

    def test_get_yaml_applies_back_unchanged_and_validate_checks_offline(self):
        self.put(spec(self.port, self.out))
        got = self.ctl("get", "default/p", "-o", "yaml")
        self.assertEqual(got.returncode, 0, got.stderr)
        self.assertTrue(got.stdout.startswith("name: default/p\npipeline:"), got.stdout[:200])
        same = self.ctl("diff", "-f", "-", input=got.stdout)  # as kubectl diff: exit 0, nothing would change
        self.assertEqual((same.returncode, same.stdout.strip()), (0, "no changes: the running spec is the file's"))
        again = self.ctl("apply", "-f", "-", input=got.stdout)  # the document names the pipeline
        self.assertEqual(again.returncode, 0, again.stderr)
        status, body, _ = self.admin.http("GET", PIPE + "/rollouts")
        self.assertEqual(body[0]["action"], "noop", "get -o yaml | apply -f - changes nothing")
        changed = self.ctl("diff", "-f", "-", input=got.stdout.replace("v: 1", "v: 7"))
        self.assertEqual(changed.returncode, 1, changed.stderr)
        self.assertIn("nodes.t.config.set.v: 1 -> 7", changed.stdout)
        elsewhere = self.ctl("apply", "-f", "-", "default/q", input=got.stdout)
        self.assertEqual(elsewhere.returncode, 2)
        self.assertIn("names default/p, not default/q: nothing was done", elsewhere.stderr)
        # describe -o json is taken back as well (its spec).
        described = self.ctl("describe", "p", "-o", "json")
        self.assertEqual(self.ctl("apply", "-f", "-", "p", input=described.stdout).returncode, 0)
        self.assertEqual(self.ctl("get", "pipeline", "p").stdout.splitlines()[1].split()[:2], ["default:p", "running"])
        # validate: the same messages as the server, offline.
        good = os.path.join(self.engine.dir, "good.yaml")
        with open(good, "w") as f:
            f.write(got.stdout)
        out = self.ctl("validate", "-f", good, env_extra={"DROVER_ADMIN": "ipc:///nonexistent/admin.sock"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("a valid PipelineSpec (spec_hash sha1:", out.stdout)
        bad = os.path.join(self.engine.dir, "bad.yaml")
        with open(bad, "w") as f:
            f.write("nodes:\n  in: {type: receiver:generatr, to: [out]}\n  out: {type: exporter:null, config: {x: 1}}\n")
        out = self.ctl("validate", "-f", bad)
        self.assertEqual(out.returncode, 1)
        status, reply, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/v", body={"pipeline": {
            "nodes": {"in": {"type": "receiver:generatr", "to": ["out"]},
                      "out": {"type": "exporter:null", "config": {"x": 1}}}}})
        self.assertEqual(status, 422)
        for detail in reply["error"]["details"]:
            self.assertRegex(out.stderr, r"  %s \(line \d+\): %s" % (re.escape(detail["path"]),
                                                                    re.escape(detail["message"])), out.stderr)
        config = os.path.join(self.engine.dir, "drover.yaml")
        out = self.ctl("validate", "-f", config)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("a valid config file", out.stdout)
        with open(bad, "w") as f:
            f.write("engine:\n  run_dir: /tmp/x\n  hearbeat_interval_ms: 5\n")
        out = self.ctl("validate", "-f", bad)
        self.assertEqual(out.returncode, 1)
        self.assertIn("hearbeat_interval_ms", out.stderr)
        # A script's syntax, offline too: droverctl links no Lua and asks the
        # drover-worker beside it; without one it says the scripts went unchecked.
        with open(bad, "w") as f:
            f.write('pipeline:\n  nodes:\n    in: {type: receiver:generator, config: {rate: 1}, to: [s]}\n'
                    '    s: {type: processor:lua, config: {script: "function process(r)\\n  return r +\\nend"}, to: [o]}\n'
                    '    o: {type: exporter:null}\n')
        out = self.ctl("validate", "-f", bad)
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("nodes.s.config.script (line 4): syntax error at line 3: unexpected symbol near 'end'", out.stderr)
        alone = os.path.join(self.engine.dir, "alone")
        os.mkdir(alone)
        shutil.copy(f"{BIN}/droverctl", alone)
        out = subprocess.run([f"{alone}/droverctl", "validate", "-f", bad], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("scripts were not compiled: no drover-worker beside droverctl", out.stderr)
        # An admin socket that is not there is said at once, not after -t.
        started = time.monotonic()
        out = self.ctl("-e", "ipc:///nonexistent/admin.sock", "status")
        self.assertEqual(out.returncode, 3)
        self.assertIn("no admin socket at /nonexistent/admin.sock", out.stderr)
        self.assertLess(time.monotonic() - started, 5)


if __name__ == "__main__":
    unittest.main()
