"""engine.watch_config through the real binaries: the config file changed the
way the kubelet changes a mounted ConfigMap (a new timestamped directory,
then a `..data` symlink renamed over the old one), the way editors save
(write a temp file, rename it over), and in a burst of writes: each gives
exactly one reload; touching the file gives none; an invalid file changes
nothing and says why, and the next good one is applied; other files written
in the same directory are ignored."""

import os
import shutil
import unittest

from harness import Admin, Engine, EngineTest, free_port, wait_until

CONFIG = """engine:
  run_dir: {run}
  watch_config: true
  heartbeat_interval_ms: 100
  admin: {{ http: "127.0.0.1:{port}" }}
groups:
  default:
    pipelines:
      a:
        nodes:
          g: {{type: receiver:generator, config: {{rate: 20, record: {{v: {version}}}}}, to: [out]}}
          out: {{type: exporter:null}}
        policies: {{rollout: {{canary: {{hold_secs: 0}}}}}}
"""


class WatchConfig(EngineTest):
    def setUp(self):
        self.http_port = free_port()
        self.engine = Engine("placeholder")
        self.addCleanup(self.engine.cleanup)
        self.conf = os.path.join(self.engine.dir, "conf")
        os.makedirs(self.conf)
        self.engine.config_path = os.path.join(self.conf, "drover.yaml")
        self.admin = Admin(self.engine, self.http_port)

    def text(self, version):
        return CONFIG.format(run=self.engine.run_dir, port=self.http_port, version=version)

    def start(self):
        self.engine.start()
        self.admin.wait_ready()
        self.assertIn("watching the config file", self.engine.log_text())

    def version(self):
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/a")
        return body["spec"]["nodes"]["g"]["config"]["record"]["v"] if status == 200 else None

    def reloads(self):
        return self.engine.log_text().count("config reloaded path=")

    def applied(self, version, reloads):
        """Waits until the pipeline runs `version`, then checks the reload count."""
        wait_until(lambda: self.version() == version and self.admin.http("GET", "/readyz")[0] == 200, 15,
                   f"version {version} applied")
        self.assertEqual(self.reloads(), reloads, self.engine.log_text()[-3000:])

    def kubelet_write(self, version_text, stamp):
        """What the kubelet's atomic writer does: a new timestamped directory,
        a ..data_tmp symlink to it renamed over ..data, the old one removed."""
        new_dir = os.path.join(self.conf, f"..2026_11_23_00_00_{stamp:02d}.{stamp}")
        os.makedirs(new_dir)
        with open(os.path.join(new_dir, "drover.yaml"), "w") as f:
            f.write(version_text)
        data = os.path.join(self.conf, "..data")
        old_dir = os.path.join(self.conf, os.readlink(data)) if os.path.islink(data) else None
        tmp = os.path.join(self.conf, "..data_tmp")
        os.symlink(os.path.basename(new_dir), tmp)
        os.rename(tmp, data)
        if not os.path.exists(self.engine.config_path):
            os.symlink("..data/drover.yaml", self.engine.config_path)
        if old_dir:
            shutil.rmtree(old_dir)

    def test_a_configmap_update_the_kubelet_way_reloads_once(self):
        self.kubelet_write(self.text(1), 1)
        self.start()
        self.assertEqual(self.version(), 1)
        self.kubelet_write(self.text(2), 2)
        self.applied(2, 1)
        self.assertIn("the config file changed: reloading config=", self.engine.log_text())
        # A reload is a PUT's rollout: the spec's canary holds (here for 0 s) before the rest.
        latest = self.admin.http("GET", "/api/v1/groups/default/pipelines/a/rollouts")[1][0]
        self.assertIn("hold", [s["op"] for s in latest["plan"]])
        self.assertEqual((latest["state"], latest["canary"]["verdict"]), ("succeeded", "pass"))
        # An invalid file: refused, nothing changes, /readyz as it was.
        self.kubelet_write(self.text(3).replace("groups:", "groups: [oops"), 3)
        wait_until(lambda: "reload refused, nothing changed" in self.engine.log_text(), 10, "the refusal")
        self.assertEqual((self.version(), self.admin.http("GET", "/readyz")[0]), (2, 200))
        self.kubelet_write(self.text(4), 4)
        self.applied(4, 2)
        self.assertEqual(self.engine.log_text().count("reload refused"), 1)
        metrics = self.admin.http("GET", "/metrics")[1]
        self.assertIn('drover_config_reloads_total{result="applied"} 2', metrics)
        self.assertIn('drover_config_reloads_total{result="refused"} 1', metrics)

    def test_an_editors_rename_over_a_burst_and_a_touch(self):
        with open(self.engine.config_path, "w") as f:
            f.write(self.text(1))
        self.start()
        tmp = self.engine.config_path + ".swp"
        with open(tmp, "w") as f:
            f.write(self.text(2))
        os.replace(tmp, self.engine.config_path)
        self.applied(2, 1)
        # A burst of writes, as fast as Python makes them: one reload, of the last.
        for version in range(3, 23):
            with open(self.engine.config_path, "w") as f:
                f.write(self.text(version))
        self.applied(22, 2)
        # Other files written beside it are not its business: not even a log line.
        before = self.engine.log_text().count("watch_config")
        for i in range(50):
            with open(os.path.join(self.conf, f"other-{i % 3}.yaml"), "w") as f:
                f.write(f"n: {i}\n")
        os.replace(os.path.join(self.conf, "other-0.yaml"), os.path.join(self.conf, "renamed.yaml"))
        # A touch changes no content: no reload. The next real change is the third.
        os.utime(self.engine.config_path)
        with open(self.engine.config_path, "a") as f:
            f.write("")
        wait_until(lambda: "changed on disk but its content did not" in self.engine.log_text(), 10,
                   "the touch noticed")
        self.assertEqual(self.reloads(), 2)
        self.assertEqual(self.engine.log_text().count("watch_config"), before + 1,
                         "one line for the touch, none for the other files")
        with open(self.engine.config_path, "w") as f:
            f.write(self.text(23))
        self.applied(23, 3)


if __name__ == "__main__":
    unittest.main()
