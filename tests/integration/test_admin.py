"""The admin plane through the real binaries: every route over zmq and HTTP
with equal answers, auth refusals, garbage on both sockets, a Kubernetes-like
readiness probe loop, the events stream, and droverctl in both formats."""

import copy
import json
import os
import shutil
import random
import signal
import socket
import subprocess
import time
import unittest

import msgpack
import zmq

from harness import BIN, Admin, EngineTest, foreign_threads, free_port, wait_until

CONFIG = """
engine:
  run_dir: {RUN}
  heartbeat_interval_ms: 200
  admin:
    http: 127.0.0.1:HTTP
TOKEN
groups:
  default:
    pipelines:
      gen:
        cores: { count: 1 }
        nodes:
          g: { type: receiver:generator, config: { rate: 100 }, to: [out] }
          out: { type: exporter:file, config: { path: "{OUT}/gen-{core}.ndjson" } }
        policies:
          restart: { max_restarts: 10, window_secs: 60, initial_backoff_ms: 1500, max_backoff_ms: 3000 }
      ingest:
        cores: { count: 2 }
        nodes:
          in: { type: receiver:zmq, config: { endpoint: "tcp://127.0.0.1:ZPORT" }, to: [out] }
          out: { type: exporter:null }
"""

DROVERCTL = os.path.abspath(os.path.join(BIN, "droverctl"))

VOLATILE = {"generated_at", "last_heartbeat_at", "records_in", "records_out", "since", "errors"}


def stable(value):
    """Drops fields that change between two calls made a moment apart."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


class AdminPlane(EngineTest):
    def start(self, token=None):
        self.http_port = free_port()
        config = CONFIG.replace("HTTP", str(self.http_port)).replace("ZPORT", str(free_port()))
        token_line = ""
        if token:
            path = f"/tmp/drv-token-{os.getpid()}-{self.http_port}"
            with open(path, "w") as f:
                f.write(token + "\n")
            self.addCleanup(os.unlink, path)
            token_line = f"    http_token_file: {path}"
        engine = self.start_engine(config.replace("TOKEN", token_line))
        self.admin = Admin(engine, self.http_port, token)
        wait_until(lambda: os.path.exists(f"{engine.run_dir}/admin.sock"), 5, "admin socket")
        self.admin.wait_ready()
        return engine

    def test_every_route_answers_the_same_over_zmq_and_http(self):
        self.start()
        routes = [
            ("GET", "/livez", None),
            ("GET", "/readyz", None),
            ("GET", "/status", None),
            ("GET", "/api/v1/groups", None),
            ("PUT", "/api/v1/groups/team-a", None),
            ("GET", "/api/v1/groups/team-a", None),
            ("GET", "/api/v1/groups/default/pipelines", None),
            ("GET", "/api/v1/groups/default/pipelines/gen", None),
            ("GET", "/api/v1/groups/default/pipelines/gen/status", None),
            ("GET", "/api/v1/groups/default/pipelines/gen/rollouts", None),
            ("GET", "/api/v1/groups/default/pipelines/gen/rollouts/rollout-9", None),
            ("GET", "/api/v1/groups/default/pipelines/gen/shutdowns/shutdown-9", None),
            ("GET", "/api/v1/groups/nope/pipelines", None),
            ("GET", "/api/v1/groups/default/pipelines/nope", None),
            ("DELETE", "/api/v1/groups/default", None),
            ("GET", "/no/such/route", None),
            ("POST", "/status", None),
            ("PUT", "/api/v1/groups/Bad_Name!", None),
            ("DELETE", "/api/v1/groups/team-a", None),
            ("DELETE", "/api/v1/groups/team-a", None),
        ]
        for method, path, body in routes:
            with self.subTest(f"{method} {path}"):
                # Mutations change state: put it back between the two calls, so
                # both transports answer the same question.
                before = self.admin.zmq("GET", "/api/v1/groups")[1]
                zs, zbody = self.admin.zmq(method, path, body=body)
                if method != "GET":
                    self._restore_groups(before)
                hs, hbody, _ = self.admin.http(method, path, body=body)
                self.assertEqual(zs, hs)
                self.assertEqual(stable(zbody), stable(hbody))
        # the documented shapes
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/ingest/status")
        for key in ("group", "pipeline", "generation", "spec_hash", "phase", "desired_cores", "ready_instances",
                    "conditions", "instances", "rollout", "shutdown"):
            self.assertIn(key, body)
        self.assertEqual(body["phase"], "running")
        self.assertEqual(body["desired_cores"], [0, 1])
        self.assertEqual({c["type"] for c in body["conditions"]}, {"ready", "progressing", "degraded"})
        for inst in body["instances"]:
            for key in ("core", "generation", "pid", "state", "restarts", "started_at", "last_heartbeat_at",
                        "records_in", "records_out", "errors"):
                self.assertIn(key, inst)
        status, body, _ = self.admin.http("GET", "/api/v1/groups/nope/pipelines")
        self.assertEqual((status, body["error"]["kind"]), (404, "group_not_found"))
        status, body, resp = self.admin.http("GET", "/no/such/route")
        self.assertEqual(status, 404)
        self.assertEqual(resp.getheader("Content-Type"), "application/json")
        self.assertIn("no route GET /no/such/route", body["error"]["message"])
        status, body, resp = self.admin.http("POST", "/status")
        self.assertEqual((status, resp.getheader("Allow")), (405, "GET"))
        # Allow lists every method of the route table's rows for that path.
        status, body, resp = self.admin.http("POST", "/api/v1/groups/default/pipelines/gen")
        self.assertEqual((status, resp.getheader("Allow")), (405, "GET, PUT, DELETE"))
        self.assertIn("allowed: GET, PUT, DELETE", body["error"]["message"])
        status, body, resp = self.admin.http("GET", "/api/v1/groups/default/pipelines/gen/shutdown")
        self.assertEqual((status, resp.getheader("Allow")), (405, "POST"))
        status, body = self.admin.zmq("DELETE", "/api/v1/groups/default")
        self.assertEqual((status, body["error"]["kind"]), (409, "conflict"))

    def _restore_groups(self, groups):
        now = {g["name"] for g in self.admin.zmq("GET", "/api/v1/groups")[1]}
        wanted = {g["name"] for g in groups}
        for name in wanted - now:
            self.admin.zmq("PUT", f"/api/v1/groups/{name}")
        for name in now - wanted:
            self.admin.zmq("DELETE", f"/api/v1/groups/{name}")

    def test_status_over_http_follows_every_change(self):
        # GET /status over HTTP copies each pipeline's kept text, made again
        # when what it shows changes: counters, a new generation, a rollout.
        self.start()
        gen = lambda: self.admin.http("GET", "/status")[1]["pipelines"]["default:gen"]  # noqa: E731
        first = gen()
        wait_until(lambda: gen()["instances"][0]["records_in"] > first["instances"][0]["records_in"], 10,
                   "records_in moving in /status")
        spec = self.admin.http("GET", "/api/v1/groups/default/pipelines/gen")[1]["spec"]
        spec["nodes"]["g"]["config"]["rate"] = spec["nodes"]["g"]["config"]["rate"] + 1
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/gen", body={"pipeline": spec})
        self.assertEqual(status, 200, body)
        now = gen()
        self.assertEqual((now["generation"], now["rollout"]["rollout_id"], now["rollout"]["state"]),
                         (first["generation"] + 1, body["rollout_id"], "succeeded"))
        self.assertEqual([i["generation"] for i in now["instances"]], [first["generation"] + 1] * len(now["instances"]))
        status, body, _ = self.admin.http("POST", "/api/v1/groups/default/pipelines/gen/shutdown")
        self.assertEqual(status, 200, body)
        now = gen()
        self.assertEqual((now["phase"], now["shutdown"]["state"], now["instances"]), ("stopped", "succeeded", []))

    def test_run_dir_and_sockets_are_private(self):
        engine = self.start()
        import stat
        self.assertEqual(stat.S_IMODE(os.stat(engine.run_dir).st_mode), 0o700)
        for name in ("admin.sock", "events.sock", "control.sock", "data.sock"):
            path = os.path.join(engine.run_dir, name)
            wait_until(lambda: os.path.exists(path), 5, name)
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600, name)

    def test_metrics_over_both_transports(self):
        engine = self.start()
        wait_until(lambda: 'drover_instance_records_in_total{group="default",pipeline="gen",core="0",generation="1"} 0'
                   not in self.admin.http("GET", "/metrics")[1], 5, "generator counters in a heartbeat")
        status, text, resp = self.admin.http("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(resp.getheader("Content-Type").startswith("text/plain; version=0.0.4"))
        zstatus, ztext = self.admin.zmq("GET", "/metrics")
        self.assertEqual(zstatus, 200)
        for name in ("drover_instance_records_in_total", "drover_instance_records_out_total",
                     "drover_instance_restarts_total", "drover_rollouts_total", "drover_instance_up",
                     "drover_broker_up"):
            self.assertIn(f"# TYPE {name}", text)
            self.assertIn(f"# TYPE {name}", ztext)
        self.assertIn('drover_instance_up{group="default",pipeline="ingest",core="1",generation="1"} 1', text)
        self.assertIn('drover_rollouts_total{action="replace",state="succeeded"} 0', text)

    def test_token_guards_mutations_but_not_probes(self):
        self.start(token="s3cret-token-0123456789")
        admin = self.admin
        self.assertEqual(admin.http("GET", "/readyz", headers={"Authorization": "none"})[0], 200)
        status, body, resp = admin.http("PUT", "/api/v1/groups/x", headers={"Authorization": "Bearer wrong"})
        self.assertEqual((status, body["error"]["kind"]), (401, "unauthorized"))
        self.assertEqual(resp.getheader("WWW-Authenticate"), "Bearer")
        admin.token = None
        self.assertEqual(admin.http("PUT", "/api/v1/groups/x")[0], 401)
        self.assertEqual(admin.http("GET", "/api/v1/groups/x")[0], 404, "nothing was created")
        admin.token = "s3cret-token-0123456789"
        self.assertEqual(admin.http("PUT", "/api/v1/groups/x")[0], 200)

    def test_garbage_on_both_sockets_then_still_serving(self):
        self.start()
        rng = random.Random(42)
        # zmq: random frames, truncated valid requests, wrong shapes — each gets a 400.
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.admin.endpoint)
        valid = msgpack.packb({"method": "GET", "path": "/status"})
        frames = []
        for i in range(3000):
            kind = i % 3
            if kind == 0:
                frames.append(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64))))
            elif kind == 1:
                frames.append(valid[:rng.randint(0, len(valid) - 1)] or b"\xc1")
            else:
                frames.append(msgpack.packb(rng.choice([[1, 2], "x", {"method": 5, "path": "/"},
                                                         {"method": "GET", "path": "nope"},
                                                         {"method": "GET", "path": "/", "query": [1]}])))
        answers = 0
        # In windows of 100: a client that never reads its replies would see
        # the ROUTER drop them past its high-water mark, which is zmq's contract.
        for start in range(0, len(frames), 100):
            for frame in frames[start:start + 100]:
                sock.send(frame)
            while answers < min(start + 100, len(frames)):
                self.assertTrue(sock.poll(5000), f"only {answers} answers")
                reply = msgpack.unpackb(sock.recv())
                self.assertIn(reply["status"], (400, 404, 405, 200))
                answers += 1
        sock.close()
        status, body = self.admin.zmq("GET", "/status")
        self.assertEqual(status, 200)
        # a frame over 1 MiB: 413
        status, body = self.admin.zmq(None, None, raw=msgpack.packb({"method": "PUT", "path": "/x",
                                                                     "body": "x" * (1 << 20)}))
        self.assertEqual((status, body["error"]["kind"]), (413, "payload_too_large"))
        engine = self.engine

        def fds():
            return len(os.listdir(f"/proc/{engine.pid}/fd"))

        baseline_fds = fds()
        # HTTP: raw junk and truncated requests, thrown and abandoned (a server
        # may wait out a half-sent request; it must not stop serving others) ...
        for i in range(600):
            with socket.create_connection(("127.0.0.1", self.http_port), timeout=5) as s:
                junk = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200)))
                if i % 3 == 1:
                    junk = b"GET /status HTTP/1.1\r\nHost: x\r\nContent-Le"
                s.sendall(junk)
        wait_until(lambda: fds() <= baseline_fds + 4, 25,
                   f"abandoned junk connections released (fds now {fds()}, before {baseline_fds})")
        # ... and complete but malformed requests, each of which gets an answer.
        for request in (b"BLAH / HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /status HTTP/9.9\r\n\r\n",
                        b"GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                        b"GET " + b"/x" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", self.http_port), timeout=5) as s:
                s.sendall(request)
                try:
                    answer = s.recv(4096)
                except TimeoutError:
                    self.fail(f"no answer to {request[:40]!r}")
                self.assertTrue(answer == b"" or answer.startswith(b"HTTP/1."), answer[:80])
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/x", raw_body="{not json")
        self.assertEqual((status, body["error"]["kind"]), (400, "invalid_request"))
        # A body declared too large is refused from its head, before a byte
        # of it is read (docs/security.md) ...
        with socket.create_connection(("127.0.0.1", self.http_port), timeout=5) as s:
            s.sendall(b"PUT /api/v1/groups/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1200001\r\n\r\n")
            answer = s.recv(4096)
            self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer[:80])
            self.assertIn(b"payload_too_large", answer)
        # ... and one sent chunked, without a length, is discarded past the limit.
        chunks = (b"[" + b"1," * 100000 for _ in range(6))
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/x", raw_body=chunks)
        self.assertEqual((status, body["error"]["kind"]), (413, "payload_too_large"))
        self.assertEqual(self.admin.http("GET", "/livez")[0], 200)
        self.assertEqual(self.admin.zmq("GET", "/livez"), (200, "ok\n"))

    def test_readiness_probe_loop_follows_a_killed_instance(self):
        engine = self.start()
        seen = []

        def probe():
            code = self.admin.http("GET", "/readyz", timeout=2)[0]
            if not seen or seen[-1] != code:
                seen.append(code)
            return code

        wait_until(lambda: probe() == 200, 10, "ready after start")
        # First kill: restarted at once (the 503 may be too short for a probe).
        # Second kill inside the restart window waits initial_backoff_ms (1.5 s):
        # the probe must see 503, then 200 once the replacement is ready.
        first = engine.wait_instances(["default/gen@1#0"])["default/gen@1#0"]
        os.kill(first, signal.SIGKILL)
        engine.wait_log(r"instance ready instance=default/gen@1#0", count=2)
        wait_until(lambda: probe() == 200, 10, "ready after the first restart")
        second = engine.wait_instances(["default/gen@1#0"])["default/gen@1#0"]
        self.assertNotEqual(first, second)
        os.kill(second, signal.SIGKILL)
        wait_until(lambda: probe() == 503, 5, "503 while the instance is down")
        wait_until(lambda: probe() == 200, 10, "200 again once replaced")
        self.assertEqual(seen, [200, 503, 200][:len(seen)] if seen[0] == 200 and len(seen) == 3 else seen)
        self.assertEqual(seen[-3:], [200, 503, 200], f"probe saw {seen}")

    def test_readyz_reports_reasons_while_not_ready(self):
        engine = self.start()
        pid = engine.wait_instances(["default/gen@1#0"])["default/gen@1#0"]
        os.kill(pid, signal.SIGKILL)
        engine.wait_log(r"instance ready instance=default/gen@1#0", count=2)
        pid = engine.wait_instances(["default/gen@1#0"])["default/gen@1#0"]
        os.kill(pid, signal.SIGKILL)  # second crash: 1.5 s backoff
        status, body = wait_until(lambda: (lambda r: r if r[0] == 503 else None)(self.admin.zmq("GET", "/readyz")),
                                  5, "503")
        self.assertFalse(body["ready"])
        self.assertTrue(any(r.startswith("default:gen: 1 of 1 cores not ready; core 0: failed") for r in body["reasons"]),
                        body["reasons"])
        status, st = self.admin.zmq("GET", "/api/v1/groups/default/pipelines/gen/status")
        self.assertEqual(st["phase"], "degraded")
        self.assertEqual(st["instances"][0]["restarts"], 2)
        self.assertEqual(st["instances"][0]["detail"], "killed by signal 9")

    def test_events_stream(self):
        engine = self.start()
        sub = self.admin.subscribe("instance.")
        pid = engine.wait_instances(["default/gen@1#0"])["default/gen@1#0"]
        ns_pid = self.admin.http("GET", "/api/v1/groups/default/pipelines/gen/status")[1]["instances"][0]["pid"]
        os.kill(pid, signal.SIGKILL)
        events = {}
        deadline = time.monotonic() + 10
        while len(events) < 3 and time.monotonic() < deadline:
            if sub.poll(200):
                topic, data = sub.recv_multipart()
                if topic.startswith(b"instance."):
                    events.setdefault(topic.decode(), msgpack.unpackb(data))
        sub.close()
        self.assertEqual(set(events), {"instance.exited", "instance.started", "instance.ready"})
        exited = events["instance.exited"]
        self.assertEqual((exited["group"], exited["pipeline"], exited["signal"], exited["exit_code"],
                          exited["expected"], exited["pid"]), ("default", "gen", 9, None, False, ns_pid))
        for event in events.values():
            self.assertIn("time", event)
            self.assertEqual(event["instance"], "default/gen@1#0")

    def test_droverctl_in_both_formats(self):
        engine = self.start()
        endpoint = self.admin.endpoint

        def ctl(*args, check=True):
            proc = subprocess.run([DROVERCTL, "-e", endpoint, *args], capture_output=True, text=True, timeout=20)
            if check:
                self.assertEqual(proc.returncode, 0, proc.stderr)
            return proc

        out = ctl("status").stdout.splitlines()
        self.assertEqual(out[0].split(), ["PIPELINE", "PHASE", "GEN", "READY", "ON_CORES", "RESTARTS", "RECORDS_IN",
                                          "RECORDS_OUT", "ERRORS", "SOURCE"])
        rows = {line.split()[0]: line.split() for line in out[1:]}
        self.assertEqual(rows["default:ingest"][1:5], ["running", "1", "2/2", "0,1"])
        self.assertEqual(json.loads(ctl("-o", "json", "status").stdout)["pipelines"]["default:gen"]["phase"], "running")
        self.assertIn("default  gen,ingest", ctl("get", "groups").stdout.replace("ingest,gen", "gen,ingest"))
        self.assertEqual([g["name"] for g in json.loads(ctl("-o", "json", "get", "groups").stdout)], ["default"])
        described = ctl("describe", "default/ingest").stdout
        self.assertIn("Phase:       running", described)
        self.assertIn("default/ingest@1#1", described)
        self.assertEqual(json.loads(ctl("-o", "json", "describe", "default/ingest").stdout)["status"]["pipeline"], "ingest")
        self.assertIn("ready: yes", ctl("health").stdout)
        proc = ctl("describe", "default/nope", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn('404 pipeline_not_found: no pipeline "nope" in group "default"', proc.stderr)
        proc = ctl("delete", "group", "default", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("409 conflict", proc.stderr)
        self.assertIn("group team-z created", ctl("create", "group", "team-z").stdout)
        self.assertIn("drover_instance_up", ctl("metrics").stdout)
        self.assertEqual(ctl("call", "GET", "/livez").stdout, "ok\n")
        for command in ("status", "get", "describe", "create", "delete", "health", "metrics", "events", "call"):
            proc = ctl(command, "--help")
            self.assertIn(f"usage: droverctl [options] {command}", proc.stdout)
        for nowhere, said in (("ipc:///tmp/drover-nobody-here.sock", "no admin socket at /tmp/drover-nobody-here.sock"),
                              (f"tcp://127.0.0.1:{free_port()}", "no answer")):
            proc = subprocess.run([DROVERCTL, "-e", nowhere, "-t", "1", "status"], capture_output=True, text=True, timeout=10)
            self.assertEqual((proc.returncode, said in proc.stderr), (3, True), proc.stderr)
        # events: follow the stream while an instance restarts. droverctl's
        # subscription is known live once it prints a probe event.
        import queue
        import threading
        follower = subprocess.Popen([DROVERCTL, "-e", endpoint, "-o", "json", "events", "--no-history", "--for", "30",
                                     "group.created", "instance."], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(json.loads(l)) for l in follower.stdout])
        reader.start()
        seen = []

        def printed(topic_prefix):
            while not lines.empty():
                seen.append(lines.get())
            return any(e["topic"].startswith(topic_prefix) for e in seen)

        self.admin.probe_events(lambda: printed("group."))
        os.kill(engine.wait_instances(["default/gen@1#0"])["default/gen@1#0"], signal.SIGKILL)
        wait_until(lambda: printed("instance.ready"), 10, "droverctl printed the restart")
        follower.terminate()
        follower.wait(timeout=10)
        reader.join(timeout=10)
        self.assertEqual(follower.returncode, 0)
        topics = [e["topic"] for e in seen if e["topic"].startswith("instance.")]
        self.assertEqual(topics, ["instance.exited", "instance.started", "instance.ready"])

CURVE_CONFIG = """
engine:
  run_dir: {RUN}
  admin:
    zmq: tcp://127.0.0.1:APORT
    events: tcp://127.0.0.1:EPORT
    http: ""
    curve: { server_secret_file: SERVER, clients_dir: CLIENTS }
groups:
  default:
    pipelines:
      gen:
        nodes:
          g: { type: receiver:generator, config: { rate: 1 }, to: [out] }
          out: { type: exporter:null }
"""


def write_cert(path, public, secret=None):
    """A czmq certificate file (ZPL), as zcert_save writes it."""
    with open(path, "w") as f:
        f.write("#   ZeroMQ CURVE certificate\nmetadata\ncurve\n")
        f.write(f'    public-key = "{public.decode()}"\n')
        if secret:
            f.write(f'    secret-key = "{secret.decode()}"\n')


class Curve(EngineTest):
    def setUp(self):
        import tempfile
        self.keys = tempfile.mkdtemp(prefix="drv-keys-")
        self.addCleanup(shutil.rmtree, self.keys, True)
        self.clients = os.path.join(self.keys, "clients")
        os.makedirs(self.clients)
        for name, trusted in (("server", False), ("good", True), ("bad", False)):
            pub, sec = zmq.curve_keypair()
            write_cert(os.path.join(self.keys, f"{name}.key_secret"), pub, sec)
            write_cert(os.path.join(self.clients if trusted else self.keys, f"{name}.key"), pub)

    def start_curve(self, clients, extra=""):
        aport = free_port()
        config = (CURVE_CONFIG.replace("APORT", str(aport)).replace("EPORT", str(free_port()))
                  .replace("SERVER", os.path.join(self.keys, "server.key_secret")).replace("CLIENTS", clients))
        engine = self.start_engine(config.replace("    http: \"\"\n", "    http: \"\"\n" + extra))
        engine.wait_log(r"admin listening zmq=tcp://127.0.0.1:\d+ .* curve=on")
        endpoint = f"tcp://127.0.0.1:{aport}"

        def ctl(*args):
            return subprocess.run([DROVERCTL, "-e", endpoint, "-t", "2", *args, "health"],
                                  capture_output=True, text=True, timeout=20)
        return engine, ctl

    def key(self, name):
        return ["--key", os.path.join(self.keys, f"{name}.key_secret"), "--server-key",
                os.path.join(self.keys, "server.key")]

    def test_tcp_admin_needs_a_known_client_key(self):
        engine, ctl = self.start_curve(self.clients)
        wait_until(lambda: ctl(*self.key("good")).returncode == 0, 10, "good key accepted")
        self.assertEqual(foreign_threads(engine.pid), {}, "CURVE is checked on droverd's loop, not in a thread")
        self.assertEqual(ctl().returncode, 3, "no key: no answer")
        self.assertEqual(ctl(*self.key("bad")).returncode, 3, "unknown key: refused")
        wrong_server_pub, _ = zmq.curve_keypair()
        self.assertEqual(ctl("--key", os.path.join(self.keys, "good.key_secret"), "--server-key",
                             wrong_server_pub.decode()).returncode, 3, "wrong server key: refused")
        # A key added to the directory counts from the next handshake.
        shutil.copy(os.path.join(self.keys, "bad.key"), os.path.join(self.clients, "bad.key"))
        wait_until(lambda: ctl(*self.key("bad")).returncode == 0, 10, "the added key accepted")

    def test_any_key_with_clients_dir_star_and_insecure(self):
        _, ctl = self.start_curve('"*"', extra="    insecure: true\n")
        wait_until(lambda: ctl(*self.key("bad")).returncode == 0, 10, "any key accepted")
        self.assertEqual(ctl().returncode, 3, "still CURVE: no key, no answer")


if __name__ == "__main__":
    unittest.main(verbosity=2)
