"""droverd refuses bad configuration files with exit 100 and one line naming
the file, the line and the field."""

import os
import subprocess
import tempfile
import unittest

from harness import DROVERD, EngineTest

GOOD_PIPELINE = """
      p:
        nodes:
          in: { type: receiver:generator, to: [out] }
          out: { type: exporter:null }
"""

CASES = [
    # (name, config text, expected line, expected substring)
    ("yaml syntax", "engine:\n  run_dir: [unclosed\n", 3, "drover.yaml: line"),
    ("unknown op", """groups:
  default:
    pipelines:
      p:
        nodes:
          in: { type: receiver:generator, to: [keep] }
          keep:
            type: processor:filter
            config: { field: level, op: gte, value: 3 }
            to: [out]
          out: { type: exporter:null }
""", 9, 'groups.default.pipelines.p.nodes.keep.config.op: unknown op "gte"'),
    ("unknown node type", """groups:
  default:
    pipelines:
      p:
        nodes:
          in: { type: receiver:pigeon, to: [out] }
          out: { type: exporter:null }
""", 6, 'nodes.in.type: unknown node type "receiver:pigeon"'),
    ("dangling to", """groups:
  default:
    pipelines:
      p:
        nodes:
          in: { type: receiver:generator, to: [nowhere] }
          out: { type: exporter:null }
""", 6, 'nodes.in.to: dangling: no node "nowhere"'),
    ("too many cores", """groups:
  default:
    pipelines:
      p:
        cores: { count: 4096 }
""" + GOOD_PIPELINE.split("\n", 2)[2], 5, "cores.count: 4096 cores asked"),
    ("tcp admin without curve", """engine:
  admin:
    zmq: tcp://0.0.0.0:7000
""", 3, "engine.admin.zmq: tcp:// admin endpoint without CURVE"),
    ("public http without token", """engine:
  admin:
    http: 0.0.0.0:8080
""", 3, "engine.admin.http: non-loopback HTTP"),
    ("unknown engine key", "engine:\n  run_dri: /tmp/x\n", 2, 'engine.run_dri: unknown key "run_dri"'),
    ("duplicate endpoint", """groups:
  default:
    pipelines:
      a:
        nodes:
          in: { type: receiver:zmq, config: { endpoint: "tcp://127.0.0.1:5999" }, to: [out] }
          out: { type: exporter:null }
      b:
        nodes:
          in: { type: receiver:zmq, config: { endpoint: "tcp://127.0.0.1:5999" }, to: [out] }
          out: { type: exporter:null }
""", 10, "is already bound by groups.default.pipelines.a"),
]


class ConfigErrors(unittest.TestCase):
    def run_droverd(self, text):
        with tempfile.TemporaryDirectory(prefix="drv-cfg-") as d:
            path = os.path.join(d, "drover.yaml")
            with open(path, "w") as f:
                f.write(text)
            proc = subprocess.run([DROVERD, "-c", path], capture_output=True, text=True, timeout=10)
            return proc.returncode, proc.stderr.replace(d + "/", "")

    def test_each_invalid_config_exits_100_with_file_line_and_field(self):
        for name, text, line, expected in CASES:
            with self.subTest(name):
                code, stderr = self.run_droverd(text)
                self.assertEqual(code, 100, stderr)
                lines = stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, f"one line: {stderr!r}")
                self.assertIn(expected, lines[0])
                if name != "yaml syntax":
                    self.assertTrue(lines[0].startswith(f"droverd: drover.yaml:{line}: "), lines[0])

    def test_missing_file_and_usage(self):
        proc = subprocess.run([DROVERD], capture_output=True, text=True, timeout=10)
        self.assertEqual(proc.returncode, 100)
        self.assertIn("usage", proc.stderr)
        proc = subprocess.run([DROVERD, "-c", "/nonexistent/drover.yaml"], capture_output=True, text=True,
                              timeout=10)
        self.assertEqual(proc.returncode, 100)
        self.assertIn("/nonexistent/drover.yaml: cannot open", proc.stderr)

    def test_check_accepts_the_example(self):
        example = os.path.join(os.path.dirname(__file__), "../../examples/drover.yaml")
        proc = subprocess.run([DROVERD, "--check", "-c", example], capture_output=True, text=True, timeout=10)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_check_accepts_the_archive_example(self):
        example = os.path.join(os.path.dirname(__file__), "../../examples/archive.yaml")
        env = dict(os.environ, DROVER_EXPORT_ENDPOINT="http://127.0.0.1:4318", ARCHIVE_BUCKET="acme-archive",
                   AWS_REGION="eu-west-1")
        proc = subprocess.run([DROVERD, "--check", "-c", example], capture_output=True, text=True, timeout=10, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)


class VersionInfo(EngineTest):
    """Contract 7.4: which drover this is, from the binary and from a running engine."""

    def test_version_and_build_info(self):
        import re
        proc = subprocess.run([DROVERD, "--version"], capture_output=True, text=True, timeout=10)
        self.assertEqual(proc.returncode, 0)
        (version,) = re.fullmatch(r"droverd (\d+\.\d+\.\d+)\n", proc.stdout).groups()
        self.start_admin_engine()
        metrics = self.admin.http("GET", "/metrics")[1]
        metrics = metrics if isinstance(metrics, str) else metrics.decode()
        self.assertIn(f'drover_build_info{{version="{version}"}} 1', metrics)
        self.assertEqual(self.admin.http("GET", "/api/v1/engine")[1]["version"], version)


if __name__ == "__main__":
    unittest.main(verbosity=2)
