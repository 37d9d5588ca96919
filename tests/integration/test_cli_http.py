"""droverctl over the HTTP admin (-e http://host:port), through the real
binaries: the same commands and output as over zmq, the token from
DROVER_TOKEN, --token (with a warning) or --token-file, events as
Server-Sent Events, an unreachable engine said plainly."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, EngineTest, free_port, wait_until
from test_cli import spec


class CliOverHttp(EngineTest):
    """droverctl -e http://host:port: the same commands and output as over
    zmq, the token from --token or DROVER_TOKEN (what a kubectl
    port-forward user has)."""

    TOKEN = "s3cret-t0ken-for-droverctl"

    def setUp(self):
        self.http_port = free_port()
        token_file = os.path.join(tempfile.mkdtemp(prefix="drv-token-"), "token")
        with open(token_file, "w") as f:
            f.write(self.TOKEN + "\n")
        self.addCleanup(shutil.rmtree, os.path.dirname(token_file), True)
        from harness import Admin, engine_yaml
        text = engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n").replace(
            '  admin: { http: "127.0.0.1:HTTP" }', f'  admin: {{ http: "127.0.0.1:HTTP", http_token_file: {token_file} }}')
        self.engine = self.start_engine(text.replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port, token=self.TOKEN)
        self.admin.wait_ready()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.out = self.engine.out_dir

    def ctl(self, *args, token=True, endpoint=None, **kw):
        env = dict(os.environ)
        env.pop("DROVER_TOKEN", None)
        if token:
            env["DROVER_TOKEN"] = self.TOKEN
        return subprocess.run([f"{BIN}/droverctl", "-e", endpoint or self.url, *args], capture_output=True,
                              text=True, timeout=30, env=env, **kw)

    def test_the_same_commands_over_http(self):
        path = os.path.join(self.engine.dir, "p.yaml")
        with open(path, "w") as f:
            json.dump(spec(free_port(), self.out), f)
        out = self.ctl("apply", "-f", path, "p")
        self.assertEqual(out.returncode, 0, out.stderr)
        over_zmq = subprocess.run([f"{BIN}/droverctl", "-e", self.admin.endpoint, "-o", "json", "get", "p"],
                                  capture_output=True, text=True, timeout=30)
        over_http = self.ctl("-o", "json", "get", "p")
        self.assertEqual(over_http.returncode, 0, over_http.stderr)
        self.assertEqual(json.loads(over_http.stdout), json.loads(over_zmq.stdout))
        self.assertIn("default:p", self.ctl("status").stdout)
        self.assertIn("drover_build_info", self.ctl("metrics").stdout)
        self.assertIn("Phase:       running", self.ctl("describe", "default:p").stdout)
        self.assertEqual(self.ctl("rollout", "history", "p").returncode, 0)
        self.assertRegex(self.ctl("version").stdout, r"droverd +\d+\.\d+\.\d+ \(pid 1")
        # Mutations need the token: without it the engine's 401 says so.
        denied = self.ctl("shutdown", "p", token=False)
        self.assertEqual(denied.returncode, 1)
        self.assertIn("401", denied.stderr)
        given = self.ctl("--token", self.TOKEN, "shutdown", "p", token=False)
        self.assertEqual(given.returncode, 0, given.stderr)
        self.assertIn("--token shows the token to every user", given.stderr)
        token_file = os.path.join(self.engine.dir, "token")
        with open(token_file, "w") as f:
            f.write(self.TOKEN + "\n")
        from_file = self.ctl("--token-file", token_file, "apply", "-f", path, "p", token=False)
        self.assertEqual((from_file.returncode, from_file.stderr), (0, ""))
        # Events over HTTP: the server's Server-Sent Events.
        waiter = subprocess.Popen([f"{BIN}/droverctl", "-e", self.url, "-o", "json", "events", "--no-history", "--count", "1",
                                   "--for", "20", "rollout."], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=dict(os.environ, DROVER_TOKEN=self.TOKEN))
        wait_until(lambda: self.admin.http("GET", "/metrics")[1].count("drover_sse_clients 1") == 1, 10,
                   "the events client connected")
        self.assertEqual(self.ctl("apply", "-f", path, "p").returncode, 0)
        stdout, stderr = waiter.communicate(timeout=30)
        self.assertEqual(waiter.returncode, 0, stderr)
        self.assertEqual(json.loads(stdout.splitlines()[0])["topic"].split(".")[0], "rollout")
        # Unreachable: said plainly, exit 3.
        gone = self.ctl("status", endpoint=f"http://127.0.0.1:{free_port()}")
        self.assertEqual(gone.returncode, 3)
        self.assertIn("Couldn't connect to server", gone.stderr)


if __name__ == "__main__":
    unittest.main()
