"""Upgrading drover in place (docs/operations.md, "Upgrading drover"):
the build is installed into a directory and started from there; the same
source built under another version (build/tests/next) is moved over the
installed files as a package manager does (written beside, renamed over);
then `droverctl upgrade`, the route or SIGUSR2 replace every process while
clients send."""
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from harness import (BIN, Admin, EngineTest, changes_under_load, children_of, cmdline, engine_yaml, every_one_once,
                     free_port, ndjson_keepalive_client, proc_status, read_ndjson, wait_until)
import grpc_otlp
from grpc_otlp import WHY_NOT

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


class UpgradeBase(EngineTest):
    """An engine started from an install directory, the next version at hand."""

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
        return self.admin.upgrade_state()

    def wait_upgraded(self, timeout=60):
        return self.admin.wait_upgraded(timeout)

    def live_children(self):
        """droverd's children (host pids): the broker, the zygote, the instances."""
        return [c for c in children_of(self.engine.pid) if not (proc_status(c, "State") or "Z").startswith("Z")]

    def processes(self):
        return self.admin.http("GET", "/api/v1/engine")[1]["processes"]

    def ctl(self, *args):
        env = dict(os.environ, DROVER_ADMIN=f"http://127.0.0.1:{self.http_port}")
        return subprocess.run([f"{BIN}/droverctl", *args], capture_output=True, text=True, timeout=120, env=env)

    def send_one(self, n):
        status = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        status.request("POST", "/ingest", body=f'{{"one": {n}}}\n', headers={"Content-Type": "application/x-ndjson"})
        code = status.getresponse().status
        status.close()
        return code


class Upgrade(UpgradeBase):
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


    def test_droverctl_upgrade_follows_it_and_version_shows_every_process(self):
        self.put(self.spec(cores=1))
        install(NEXT, self.install_dir)
        done = self.ctl("upgrade")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn(f"upgraded: droverd {VERSION} -> {VERSION}+next", done.stdout)
        self.assertRegex(done.stdout, r"default/web  rollout-\d+  succeeded")
        version = self.ctl("version")
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertIn(f"droverd   {VERSION}+next (pid 1,", version.stdout)
        self.assertRegex(version.stdout, rf"instance +default/web@2#0 +pid \d+ +{VERSION}\+next")
        self.assertRegex(version.stdout, rf"broker +- +pid \d+ +{VERSION}\+next")
        self.assertEqual(self.send_one(1), 200)
        # Again, with nothing new on disk: the new droverd hands over to itself as well.
        again = self.ctl("upgrade")
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertIn(f"upgraded: droverd {VERSION}+next -> {VERSION}+next", again.stdout)
        self.assertRegex(self.ctl("version").stdout, rf"instance +default/web@3#0 +pid \d+ +{VERSION}\+next")
        self.assertEqual(self.send_one(2), 200)

    def kept_events(self):
        status, body = self.admin.zmq("GET", "/api/v1/events")[:2]
        self.assertEqual(status, 200, body)
        return body["events"]

    def test_a_pipeline_with_a_canary_policy_is_rolled_through_its_canary(self):
        spec = self.spec(cores=2)
        spec["pipeline"]["policies"] = {"rollout": {"canary": {"cores": 1, "hold_secs": 1, "max_error_ratio": 0.5}}}
        self.put(spec)
        install(NEXT, self.install_dir)
        done = self.ctl("upgrade")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        rollout_id = self.upgrade_state()["pipelines"][0]["rollout_id"]
        status, rollout, _ = self.admin.http("GET", f"/api/v1/groups/default/pipelines/web/rollouts/{rollout_id}")
        self.assertEqual((status, rollout["cause"], rollout["state"]), (200, "upgrade", "succeeded"), rollout)
        self.assertEqual(rollout["canary"]["verdict"], "pass", rollout)
        self.assertIn("hold", [step["op"] for step in rollout["plan"]])

    def test_sigusr2_upgrades_and_the_event_says_from_and_to(self):
        self.put(self.spec(cores=1))
        last_id = max(e["id"] for e in self.kept_events())
        install(NEXT, self.install_dir)
        self.engine.signal(signal.SIGUSR2)
        done = self.wait_upgraded()
        self.assertEqual((done["state"], done["by"]), ("succeeded", "SIGUSR2"), done)
        events = self.ctl("events", "--count", "1", "--for", "10", "-o", "json", "engine.upgraded")
        self.assertEqual(events.returncode, 0, events.stderr)
        event = json.loads(events.stdout.splitlines()[0])
        self.assertEqual((event["topic"], event["from_version"], event["to_version"]),
                         ("engine.upgraded", VERSION, VERSION + "+next"), event)
        self.engine.wait_log(r"upgrade: took over pid=1 ")
        # Event ids go on from where the droverd before stopped: a client's Last-Event-ID keeps its meaning.
        upgraded = [e for e in self.kept_events() if e["topic"] == "engine.upgraded"]
        self.assertEqual(len(upgraded), 1)
        self.assertGreater(upgraded[0]["id"], last_id)

    def test_a_binary_that_cannot_take_over_is_refused_and_the_engine_serves_on(self):
        self.put(self.spec(cores=1))
        pid = self.engine.pid
        before = {p["pid"] for p in self.processes()}
        gate = os.path.join(self.install_dir, "go")
        broken = os.path.join(self.install_dir, ".droverd.new")
        with open(broken, "w") as f:  # says something unexpected once the test lets it, and fails
            f.write(f"#!/bin/sh\nwhile [ ! -e {gate} ]; do sleep 0.02; done\necho 'libfoo.so.1: cannot open'\nexit 127\n")
        os.chmod(broken, 0o755)
        os.rename(broken, os.path.join(self.install_dir, "droverd"))
        status, body, _ = self.admin.http("POST", "/api/v1/engine/upgrade", body={})
        self.assertEqual((status, body["state"]), (202, "checking"), body)
        # One at a time: a second upgrade is refused while the first is checked.
        status, body, _ = self.admin.http("POST", "/api/v1/engine/upgrade", body={})
        self.assertEqual(status, 409, body)
        self.assertIn("an upgrade is already in progress", body["error"]["message"])
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/web", body=self.spec(cores=2))
        self.assertEqual(status, 409, body)
        self.assertIn("an upgrade of droverd is in progress", body["error"]["message"])
        open(gate, "w").close()
        done = self.wait_upgraded()
        self.assertEqual(done["state"], "failed", done)
        self.assertIn("refused to take over (exit 127): libfoo.so.1: cannot open", done["error"])
        # Untouched: the same processes, the old version, still serving.
        self.assertEqual(self.engine.pid, pid)
        self.assertEqual({p["pid"] for p in self.processes()}, before)
        self.assertEqual(self.admin.http("GET", "/api/v1/engine")[1]["version"], VERSION)
        self.assertEqual(self.send_one(2), 200)
        # A half-installed upgrade (droverd new, the worker old) is refused too, naming the binary.
        install(NEXT, self.install_dir)
        shutil.copy2(os.path.join(BIN, "drover-worker"), os.path.join(self.install_dir, "drover-worker"))
        status, body, _ = self.admin.http("POST", "/api/v1/engine/upgrade", body={})
        self.assertEqual(status, 202, body)
        done = self.wait_upgraded()
        self.assertEqual(done["state"], "failed", done)
        self.assertIn(f'drover-worker says "drover-worker {VERSION}", expected "drover-worker {VERSION}+next"',
                      done["error"])
        self.assertEqual({p["pid"] for p in self.processes()}, before)
        self.assertEqual(self.send_one(3), 200)
        # No droverd at the path at all (an uninstall half done): refused at once, saying so.
        os.unlink(os.path.join(self.install_dir, "droverd"))
        status, body, _ = self.admin.http("POST", "/api/v1/engine/upgrade", body={})
        self.assertEqual((status, body["state"]), (202, "failed"), body)
        self.assertIn("cannot run the new droverd", body["error"])
        self.assertIn("No such file or directory", body["error"])
        self.assertEqual(self.send_one(4), 200)

    def test_a_binary_that_never_answers_is_killed_at_its_deadline(self):
        # It hangs, and a process it started holds its output open: droverd
        # kills it at 10 s, stops reading, and the old droverd serves on.
        self.put(self.spec(cores=1))
        before = {p["pid"] for p in self.processes()}
        hung = os.path.join(self.install_dir, ".droverd.new")
        with open(hung, "w") as f:
            f.write("#!/bin/sh\necho checking\nsleep 20 &\nexec sleep 20\n")
        os.chmod(hung, 0o755)
        os.rename(hung, os.path.join(self.install_dir, "droverd"))
        started = time.monotonic()
        status, body, _ = self.admin.http("POST", "/api/v1/engine/upgrade", body={})
        self.assertEqual((status, body["state"]), (202, "checking"), body)
        done = self.wait_upgraded(timeout=30)
        self.assertGreaterEqual(time.monotonic() - started, 9.5, "the check had its full time")
        self.assertEqual(done["state"], "failed", done)
        self.assertIn("--upgrade-check) did not answer within 10 s", done["error"])
        self.assertEqual({p["pid"] for p in self.processes()}, before)
        self.assertEqual(self.send_one(5), 200)


class StrayHandoff(EngineTest):
    """A DROVER_UPGRADE_FD that droverd did not write itself (issue 47): a
    variable inherited from a shell with a pipe behind it, or a memory file
    shaped like a handoff. droverd says so, starts afresh at once, and
    signals nobody the document names."""

    def start_with(self, fd, env):
        self.http_port = free_port()
        self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)), env=env, pass_fds=(fd,))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready(20)

    def test_a_pipe_behind_the_variable_neither_hangs_nor_is_trusted(self):
        read, write = os.pipe()  # never written, never closed while droverd starts: a read would block for ever
        self.addCleanup(os.close, write)
        self.addCleanup(os.close, read)
        self.start_with(read, {"DROVER_UPGRADE_FD": str(read)})
        self.engine.wait_log(r"droverd: upgrade: descriptor \d+ is not a handoff droverd wrote .*starting afresh")

    def test_a_handoff_shaped_file_naming_processes_not_its_own_is_refused(self):
        fd = os.memfd_create("drover-handoff", 0)
        self.addCleanup(os.close, fd)
        #  It names droverd itself (pid 1 in its namespace) as the broker.
        os.write(fd, json.dumps({"format": 1, "version": VERSION, "upgrade": {}, "state": {"pipelines": []},
                                 "started_at": 0, "next_shutdown_id": 1, "next_event_id": 1, "http_fd": -1,
                                 "broker": {"pid": 1}, "pipelines": []}).encode())
        os.lseek(fd, 0, os.SEEK_SET)
        self.start_with(fd, {"DROVER_UPGRADE_FD": str(fd)})
        self.engine.wait_log(r"names processes that are not its children\); starting afresh")
        status, _, _ = self.admin.http("GET", "/api/v1/engine")[:3]
        self.assertEqual(status, 200, "serving, not shut down by a signal it sent itself")
        self.assertNotIn("shutdown", self.engine.log_text())


class UpgradeThroughSymlink(UpgradeBase):
    """Releases side by side and a `current` symlink moved to the new one
    (Capistrano's, or /opt/app/current's, layout): the upgrade follows the
    path droverd was started as, not the file it was."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="drv-releases-")
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        for release, source in (("old", BIN), ("new", NEXT)):
            os.makedirs(os.path.join(self.root, release))
            install(source, os.path.join(self.root, release))
        os.symlink(os.path.join(self.root, "old"), os.path.join(self.root, "current"))
        self.install_dir = os.path.join(self.root, "current")
        self.http_port, self.port = free_port(), free_port()
        self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)),
                          droverd=os.path.join(self.root, "current", "droverd"))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()
        self.out = self.engine.out_dir

    def test_the_symlink_moved_to_a_new_release_is_followed(self):
        self.put(self.spec(cores=1))
        beside = os.path.join(self.root, ".current.new")
        os.symlink(os.path.join(self.root, "new"), beside)
        os.rename(beside, os.path.join(self.root, "current"))  # as ln -sfn does it: atomically
        done = self.ctl("upgrade")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual({p["version"] for p in self.processes()}, {VERSION + "+next"})
        for host_pid in [self.engine.pid] + self.live_children():
            self.assertTrue(exe_of(host_pid).startswith(os.path.join(self.root, "new") + "/"),
                            f"{cmdline(host_pid)} runs {exe_of(host_pid)}")
        self.assertEqual(self.send_one(1), 200)


@unittest.skipIf(WHY_NOT, WHY_NOT)
class UpgradeUnderLoad(UpgradeBase):
    """HTTP on new and kept-alive connections, OTLP/gRPC, syslog over UDP at
    a steady rate, into a disk buffer, while droverd upgrades."""

    def test_every_kind_of_client_sees_no_failure_and_loses_nothing(self):
        self.grpc_port, self.udp_port = free_port(), free_port()
        spec = {"pipeline": {"cores": {"count": 2}, "nodes": {
            "web": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{self.port}", "path": "/ingest"},
                    "to": ["out"]},
            "otlp": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{free_port()}",
                                                         "grpc_endpoint": f"127.0.0.1:{self.grpc_port}"},
                     "to": ["out"]},
            "sys": {"type": "receiver:syslog", "config": {"endpoint": f"udp://127.0.0.1:{self.udp_port}"},
                    "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.out}/up-{{core}}-{{generation}}.ndjson"}}},
            "policies": {"buffer": {"type": "disk", "sync": "batch", "sync_interval_ms": 20}}}}
        self.put(spec)
        http_client = ndjson_keepalive_client(self.port)
        grpc_client = grpc_otlp.logs_client(f"127.0.0.1:{self.grpc_port}", prefix="g")

        def client(cid, stop, sent, failed):
            if cid < 2:  # HTTP: acknowledged records as "h{c}-{s}"
                http_client(cid, stop, lambda items: sent([f"h{c}-{s}" for c, s in items]), failed)
                return
            grpc_client(cid, stop, sent, failed)

        datagrams, udp_stop = [0], threading.Event()

        def udp():
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                while not udp_stop.is_set():
                    s.sendto(f"<13>1 - h load - - - seq={datagrams[0]}".encode(), ("127.0.0.1", self.udp_port))
                    datagrams[0] += 1
                    if datagrams[0] % 20 == 0:
                        time.sleep(0.005)  # a steady producer, not a flood: loopback UDP drops floods
        sender = threading.Thread(target=udp)
        sender.start()

        pid = self.engine.pid

        def change(n):
            install(NEXT, self.install_dir)
            done = self.ctl("upgrade")  # the operator's way: follows it to its end
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        try:
            want = changes_under_load(self, client, change, changes=1)
        finally:
            udp_stop.set()
            sender.join()

        def got():
            keys = []
            for r in self.records():
                if "c" in r:
                    keys.append(f"h{r['c']}-{r['s']}")
                elif str(r.get("body", "")).startswith("g"):
                    keys.append(r["body"])
            return keys
        every_one_once(self, want, got, "records")
        seqs = wait_until(lambda: (lambda r: r if len(r) >= datagrams[0] else None)(
            [int(r["message"].split("=")[1]) for r in self.records() if "message" in r]), 20, "every datagram")
        self.assertEqual(sorted(seqs), list(range(datagrams[0])), "every datagram once")
        self.assertEqual({p["version"] for p in self.processes()}, {VERSION + "+next"})
        self.assertEqual(self.engine.pid, pid)
        for host_pid in [pid] + self.live_children():
            self.assertFalse(exe_of(host_pid).endswith("(deleted)"), f"{cmdline(host_pid)} runs {exe_of(host_pid)}")
        print(f"upgrade under load: {len(want)} acknowledged records (HTTP keep-alive, OTLP/gRPC) and "
              f"{datagrams[0]} datagrams, disk buffer: no request failed, none lost", flush=True)


if __name__ == "__main__":
    unittest.main()
