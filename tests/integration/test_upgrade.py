"""Upgrading drover in place (docs/operations.md, "Upgrading drover"):
the build is installed into a directory and started from there; the same
source built under another version (build/tests/next) is moved over the
installed files as a package manager does (written beside, renamed over);
then `droverctl upgrade`, the route or SIGUSR2 replace every process while
clients send."""
import glob
import http.client
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

from harness import (BIN, Admin, EngineTest, changes_under_load, children_of, cmdline, engine_yaml, every_one_once,
                     free_port, ndjson_keepalive_client, proc_status, read_ndjson, wait_until)

NEXT = os.path.join(os.path.dirname(os.path.abspath(BIN)), "tests", "next")
PROGRAMS = ("droverd", "drover-worker", "drover-broker")
VERSION = subprocess.run([os.path.join(BIN, "droverd"), "--version"], capture_output=True,
                         text=True).stdout.split()[1]


def install(source_dir, install_dir):
    """As a package manager does: each file written beside, then renamed
    over the old one (whose inode the running processes keep)."""
    for program in PROGRAMS:
        beside = os.path.join(install_dir, f".{program}.new")
        shutil.copy2(os.path.join(source_dir, program), beside)
        os.rename(beside, os.path.join(install_dir, program))


def exe_of(pid):
    return os.readlink(f"/proc/{pid}/exe")


class Upgrade(EngineTest):
    def setUp(self):
        self.install_dir = tempfile.mkdtemp(prefix="drv-install-")
        self.addCleanup(shutil.rmtree, self.install_dir, ignore_errors=True)
        install(BIN, self.install_dir)
        self.http_port = free_port()
        self.port = free_port()
        self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)),
                          droverd=os.path.join(self.install_dir, "droverd"))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()
        self.out = self.engine.out_dir

    def spec(self, cores=2):
        return {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}", "path": "/ingest"},
                   "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.out}/up-{{core}}-{{generation}}.ndjson"}}}}}

    def put(self, spec):
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/web", body=spec, timeout=30)
        self.assertEqual(status, 200, body)

    def records(self):
        rows = []
        for path in sorted(glob.glob(f"{self.out}/up-*.ndjson")):
            rows += read_ndjson(path)
        return rows

    def upgrade_state(self):
        try:
            return self.admin.http("GET", "/api/v1/engine/upgrade", timeout=2)[1]
        except (OSError, http.client.HTTPException):
            return None  # between the execution and the new droverd's first answer

    def wait_upgraded(self, timeout=60):
        return wait_until(lambda: (lambda s: s if s and s["state"] in ("succeeded", "failed") else None)(
            self.upgrade_state()), timeout, "the upgrade to end")

    def live_children(self):
        """droverd's children (host pids): the broker, the zygote, the instances."""
        return [c for c in children_of(self.engine.pid) if not (proc_status(c, "State") or "Z").startswith("Z")]

    def processes(self):
        return self.admin.http("GET", "/api/v1/engine")[1]["processes"]

    def test_an_upgrade_under_http_load_keeps_the_pid_and_loses_nothing(self):
        self.put(self.spec())
        pid = self.engine.pid
        before = {p["pid"] for p in self.processes() if p["role"] != "droverd"}

        client = ndjson_keepalive_client(self.port)

        def change(n):
            install(NEXT, self.install_dir)
            status, body, _ = self.admin.http("POST", "/api/v1/engine/upgrade", body={})
            self.assertEqual(status, 202, body)
            done = self.wait_upgraded()
            self.assertEqual(done["state"], "succeeded", done)
            self.assertEqual((done["from_version"], done["to_version"]), (VERSION, VERSION + "+next"))

        want = changes_under_load(self, client, change, changes=1)
        every_one_once(self, want, lambda: [(r["c"], r["s"]) for r in self.records()], "records")
        self.assertEqual(self.engine.pid, pid)
        self.assertIn("droverd", cmdline(pid))
        processes = self.processes()
        self.assertEqual({p["version"] for p in processes}, {VERSION + "+next"}, processes)
        self.assertFalse({p["pid"] for p in processes} & before, "every process was replaced but droverd")
        self.assertEqual(len(processes), 4, processes)  # droverd, the broker, two instances
        for host_pid in [pid] + self.live_children():
            self.assertEqual(exe_of(host_pid), os.path.join(self.install_dir, os.path.basename(exe_of(host_pid))),
                             f"{cmdline(host_pid)} runs the file now installed, not a deleted one")
        print(f"upgrade under http load: {len(want)} records in keep-alive requests, pid {pid} kept, "
              f"no request failed, none lost", flush=True)


if __name__ == "__main__":
    unittest.main()
