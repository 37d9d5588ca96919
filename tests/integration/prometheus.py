"""Debian's prometheus (2.42) as a peer nobody here wrote: started on a free
loopback port with its own storage, the remote-write receiver on, no scrape
unless asked; queried with PromQL over its HTTP API. Stopped by the test;
started again on the same storage to see what it kept."""

import json
import os
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request

from harness import free_port, wait_until


class Prometheus:
    def __init__(self, scrape_configs=None, remote_write=None):
        self.dir = tempfile.mkdtemp(prefix="drv-prom-")
        self.port = free_port()
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}}
        if scrape_configs:
            config["scrape_configs"] = scrape_configs
        if remote_write:
            config["remote_write"] = remote_write
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.proc = None
        self.start()

    def start(self):
        self.log = open(os.path.join(self.dir, "prometheus.log"), "a")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.config}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-remote-write-receiver",
             "--storage.tsdb.retention.time=1d"], stdout=self.log, stderr=subprocess.STDOUT)
        wait_until(lambda: self.ready() or self.proc.poll() is not None, 60, "prometheus ready", interval=0.1)
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {self.log_text()[-2000:]}")

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def url(self, path=""):
        return f"http://127.0.0.1:{self.port}{path}"

    def query(self, promql):
        """The instant vector of promql: [(labels, value as float)]."""
        url = self.url("/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()

    def log_text(self):
        with open(os.path.join(self.dir, "prometheus.log")) as f:
            return f.read()

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
