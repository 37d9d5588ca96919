"""Integration-test harness: runs the real droverd in its own PID namespace
(unshare --fork --pid --mount-proc), as PID 1, and talks to it only through
real sockets, files and /proc. Every wait polls with a deadline; nothing sleeps
to synchronise."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import msgpack
import zmq

BIN = os.environ.get("DROVER_BIN", os.path.join(os.path.dirname(__file__), "../../build/bin"))
DROVERD = os.path.abspath(os.path.join(BIN, "droverd"))

from records import ndjson, read_ndjson, unobserved  # noqa: E402,F401 (the tests import them from here)


_PORTS_GIVEN = set()


def free_port():
    """A port free for TCP and UDP on 127.0.0.1, below the kernel's ephemeral
    range (32768 and up), so no outgoing connection of a test running beside
    takes it before the engine binds it (bind(0) picks from that range and
    raced with them); each test process draws from its own slice of
    20000-32767, and never twice the same."""
    slice_start = 20000 + (os.getpid() % 32) * 399
    for attempt in range(2000):
        port = slice_start + (attempt * 11 + os.getpid()) % 399 if attempt < 399 else 20000 + attempt * 13 % 12767
        if port in _PORTS_GIVEN:
            continue
        try:
            with socket.socket() as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                tcp.bind(("127.0.0.1", port))
                udp.bind(("127.0.0.1", port))
        except OSError:
            continue
        _PORTS_GIVEN.add(port)
        return port
    raise AssertionError("no free port below the ephemeral range")


def curl_post(port, path, data, ctype, *extra):
    """POSTs data with curl (a client nobody here wrote) to 127.0.0.1:port;
    returns (status, body bytes, Content-Type, response head text)."""
    out = subprocess.run(["curl", "-sS", "-D", "/dev/stderr", "-o", "/dev/stdout", "-w", "\n%{http_code} %{content_type}",
                          "-H", f"Content-Type: {ctype}", *extra, "--data-binary", "@-",
                          f"http://127.0.0.1:{port}{path}"], input=data, capture_output=True, timeout=30)
    body, _, tail = out.stdout.rpartition(b"\n")
    code, _, content_type = tail.decode().partition(" ")
    return int(code), body, content_type, out.stderr.decode(errors="replace")


def engine_yaml(pipelines="{}", engine_extra=""):
    """An engine config: HTTP admin on 127.0.0.1:HTTP (the caller puts in the
    port), any extra engine keys (indented lines), the default group's
    pipelines ("{}", or an indented YAML block starting with a newline)."""
    return ("engine:\n  run_dir: {RUN}\n" + engine_extra + '  admin: { http: "127.0.0.1:HTTP" }\n'
            "groups:\n  default:\n    pipelines: " + pipelines + "\n")


# make test-asan runs sanitized binaries, several times slower: every
# deadline is stretched by this factor.
SLOW = float(os.environ.get("DROVER_TEST_SLOW", "1"))


def wait_until(predicate, timeout=10.0, what="condition", interval=0.01):
    """Polls predicate until it returns a truthy value or the deadline passes
    (timeout seconds, times DROVER_TEST_SLOW)."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def proc_status(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def children_of(pid):
    """Host pids whose parent is pid (from /proc, so it sees into namespaces)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def foreign_threads(pid):
    """droverd's threads other than its loop (tid == pid) and libzmq's own
    (named ZMQbg/...): {tid: name}. droverd is one loop, so this is {}."""
    names = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[int(tid)] = f.read().strip()
        except FileNotFoundError:
            pass  # a thread that just ended
    return {tid: name for tid, name in names.items() if tid != pid and not name.startswith("ZMQbg/")}


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def zombies_of(pid):
    return [c for c in children_of(pid) if (proc_status(c, "State") or "").startswith("Z")]


def generator_spec(out_path=None, cores=None, rate=10):
    """receiver:generator at rate -> exporter:file at out_path (its {core}
    and {generation} filled by the engine), or exporter:null without one."""
    out = {"type": "exporter:file", "config": {"path": out_path}} if out_path else {"type": "exporter:null"}
    pipeline = {"nodes": {"g": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["out"]}, "out": out}}
    if cores:
        pipeline["cores"] = {"count": cores}
    return {"pipeline": pipeline}


def zmq_file_spec(endpoint, path, ack=False, cores=None, stamp=None, rollout=None):
    """receiver:zmq at endpoint (ack mode or not) -> [processor:transform
    setting env to stamp] -> exporter:file at path; rollout: the rollout policy."""
    first = "stamp" if stamp else "out"
    nodes = {"in": {"type": "receiver:zmq", "config": {"endpoint": endpoint, "ack": ack}, "to": [first]},
             "out": {"type": "exporter:file", "config": {"path": path}}}
    if stamp:
        nodes["stamp"] = {"type": "processor:transform", "config": {"set": {"env": stamp}}, "to": ["out"]}
    pipeline = {"nodes": nodes}
    if cores:
        pipeline["cores"] = {"count": cores}
    if rollout:
        pipeline["policies"] = {"rollout": rollout}
    return {"pipeline": pipeline}


def changes_under_load(test, client, change, changes=4, clients=4):
    """Clients send while a pipeline changes: client(cid, stop, sent, failed)
    runs in a thread per client until stop is set, calling sent(items) with
    what the engine acknowledged and failed(what) for each refusal;
    change(n) makes the n-th change, once load flows and each time after
    load flowed again. Fails the test on any refusal; returns what was
    acknowledged, sorted (the caller then demands every one of it once)."""
    stop, lock = threading.Event(), threading.Lock()
    acknowledged, failures = [], []

    def sent(items):
        with lock:
            acknowledged.extend(items)

    threads = [threading.Thread(target=client, args=(c, stop, sent, failures.append)) for c in range(clients)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: len(acknowledged) >= 200, 10, "load flowing")
        for n in range(changes):
            change(n)
            mark = len(acknowledged)
            wait_until(lambda: len(acknowledged) >= mark + 100, 10, "load flowing after the change")
    finally:
        stop.set()
        for t in threads:
            t.join()
    test.assertEqual(failures, [], "nothing was refused")
    return sorted(acknowledged)


def ndjson_keepalive_client(port, path="/ingest"):
    """A client for changes_under_load: one keep-alive HTTP connection
    posting 5 NDJSON records {c, s} at a time; a response saying
    `Connection: close` (its instance drains) makes it connect again."""
    import http.client
    import json

    def client(cid, stop, sent, failed):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        seq = 0
        while not stop.is_set():
            body = "".join(json.dumps({"c": cid, "s": seq + i}) + "\n" for i in range(5))
            try:
                conn.request("POST", path, body=body, headers={"Content-Type": "application/x-ndjson"})
                resp = conn.getresponse()
                text = resp.read()
                if resp.status != 200:
                    failed((resp.status, text))
                    continue
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()  # the instance drains; the next request finds another
            except (OSError, http.client.HTTPException) as e:
                failed(repr(e))
                conn.close()
                continue
            sent([(cid, seq + i) for i in range(5)])
            seq += 5
        conn.close()
    return client


def every_one_once(test, want, got, what, timeout=20):
    """Waits until got() holds as many as want, then demands it equal want
    (sorted): every acknowledged item arrived, none twice."""
    have = wait_until(lambda: (lambda g: g if len(g) >= len(want) else None)(sorted(got())), timeout,
                      f"all {len(want)} {what}")
    test.assertEqual(have, want, f"every acknowledged {what} once")


class Engine:
    """One droverd under test, with its own run_dir, config and log."""

    def __init__(self, config_text, name="engine"):
        self.dir = tempfile.mkdtemp(prefix="drv-")
        self.run_dir = os.path.join(self.dir, "run")
        self.out_dir = os.path.join(self.dir, "out")
        os.makedirs(self.out_dir)
        self.config_path = os.path.join(self.dir, "drover.yaml")
        with open(self.config_path, "w") as f:
            f.write(config_text.replace("{RUN}", self.run_dir).replace("{OUT}", self.out_dir))
        self.log_path = os.path.join(self.dir, f"{name}.log")
        self.proc = None
        self.pid = None  # droverd's host pid (PID 1 inside its namespace)

    def start(self, env=None, droverd=None, pass_fds=()):
        """droverd: another binary than the build's (an installed copy);
        pass_fds: descriptors it inherits."""
        self.log = open(self.log_path, "w")
        full_env = dict(os.environ)
        full_env.setdefault("DROVER_LOG", "info")
        # Every cached PipelineStatus is checked against a fresh one (a shown
        # field changed without drv_registry_touch aborts droverd). The
        # benchmarks set it to 0: it doubles what /status costs.
        full_env.setdefault("DROVER_CHECK_STATUS_CACHE", "1")
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            ["unshare", "--fork", "--pid", "--mount-proc", droverd or DROVERD, "-c", self.config_path],
            stdout=self.log, stderr=subprocess.STDOUT, env=full_env, pass_fds=pass_fds)
        #  Deadlines, not waits: generous, for a machine busy with a parallel
        #  make test; a droverd that exits at once ends the wait at once.
        self.pid = wait_until(lambda: next(iter(children_of(self.proc.pid)), None) or
                              (self.proc.poll() is not None and -1), 30, "droverd to start")
        if self.pid == -1:
            raise AssertionError(f"droverd exited at once ({self.proc.returncode}): {self.log_text()[-2000:]}")
        wait_until(lambda: "droverd" in cmdline(self.pid), 30, "droverd to exec")
        return self

    def log_text(self):
        with open(self.log_path, errors="backslashreplace") as f:  # a logged path may be any bytes
            return f.read()

    def wait_log(self, pattern, timeout=10.0, count=1):
        regex = re.compile(pattern)
        return wait_until(lambda: len(regex.findall(self.log_text())) >= count and regex.findall(self.log_text()),
                          timeout, f"log /{pattern}/ x{count}")

    def instances(self):
        """{instance id: host pid} of the running workers."""
        found = {}
        for child in children_of(self.pid):
            title = cmdline(child)
            if "@" in title and "#" in title:
                state = proc_status(child, "State") or ""
                if not state.startswith("Z"):
                    found[title] = child
        return found

    def wait_instances(self, ids, timeout=10.0):
        return wait_until(lambda: (lambda now: now if all(i in now for i in ids) else None)(self.instances()),
                          timeout, f"instances {ids}")

    def ours(self):
        """True while self.pid is this engine's droverd: unshare's child, or
        (unshare gone) a droverd run with this engine's config. Once it has
        exited its host pid may belong to another test's process."""
        if self.proc.poll() is None and self.pid in children_of(self.proc.pid):
            return True
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            return False
        return "droverd" in args[0].decode(errors="replace") and self.config_path.encode() in args

    def signal(self, sig):
        if self.ours():
            os.kill(self.pid, sig)

    def wait_exit(self, timeout=30.0):
        return self.proc.wait(timeout=timeout)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.signal(signal.SIGTERM)
                self.proc.wait(timeout=15)
            except Exception:
                #  droverd is PID 1 of its namespace: killed, every process in
                #  it goes too. Killing unshare alone would leave them running.
                print(f"droverd pid {self.pid} did not stop within 15 s of SIGTERM: killed", flush=True)
                self.signal(signal.SIGKILL)
                self.proc.kill()
                self.proc.wait()
        elif self.pid and self.pid > 0 and self.ours():
            self.signal(signal.SIGKILL)  # unshare gone, droverd not: nothing is left behind
        if self.proc:
            self.log.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Admin:
    """The admin API over both transports: zmq (msgpack envelope) and HTTP."""

    def __init__(self, engine, http_port=None, token=None):
        self.engine = engine
        self.http_port = http_port
        self.token = token
        self.ctx = zmq.Context.instance()
        self.endpoint = f"ipc://{engine.run_dir}/admin.sock"

    def upgrade_state(self):
        """GET /api/v1/engine/upgrade, or None while droverd executes its
        new binary (the connection reset or refused meanwhile)."""
        try:
            return self.http("GET", "/api/v1/engine/upgrade", timeout=2)[1]
        except (OSError, http.client.HTTPException):
            return None

    def wait_upgraded(self, timeout=60):
        """The upgrade under way, once it ended (succeeded or failed)."""
        return wait_until(lambda: (lambda s: s if s and s.get("state") in ("succeeded", "failed") else None)(
            self.upgrade_state()), timeout, "the upgrade to end", interval=0.02)

    def zmq(self, method, path, query=None, body=None, timeout=5.0, raw=None):
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.endpoint)
        try:
            if raw is not None:
                sock.send(raw)
            else:
                request = {"method": method, "path": path}
                if query is not None:
                    request["query"] = query
                if body is not None:
                    request["body"] = body
                sock.send(msgpack.packb(request))
            if not sock.poll(int(timeout * 1000)):
                raise AssertionError(f"no zmq answer to {method} {path}")
            reply = msgpack.unpackb(sock.recv())
            return reply["status"], reply["body"]
        finally:
            sock.close()

    def http(self, method, path, body=None, headers=None, raw_body=None, timeout=5.0):
        import http.client
        import json
        conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=timeout)
        all_headers = dict(headers or {})
        if self.token and "Authorization" not in all_headers:
            all_headers["Authorization"] = f"Bearer {self.token}"
        if method not in ("GET", "HEAD") and "Content-Type" not in all_headers:
            all_headers["Content-Type"] = "application/json"  # docs/security.md: else 415
        data = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
        conn.request(method, path, body=data, headers=all_headers)
        resp = conn.getresponse()
        text = resp.read().decode()
        conn.close()
        ctype = resp.getheader("Content-Type", "")
        parsed = json.loads(text) if ctype.startswith("application/json") else text
        return resp.status, parsed, resp

    def wait_ready(self, timeout=10.0):
        return wait_until(lambda: self.zmq("GET", "/readyz")[0] == 200, timeout, "readyz 200")

    def probe_events(self, is_live, timeout=10.0):
        """A zmq subscription reaches its publisher asynchronously. Instead of
        sleeping, make events happen (group.created of throwaway groups) until
        is_live() reports that one arrived."""
        count = [0]

        def attempt():
            count[0] += 1
            self.zmq("PUT", f"/api/v1/groups/events-probe-{count[0]}")
            return is_live()

        return wait_until(attempt, timeout, "the event subscription to be live", interval=0.05)

    def subscribe(self, *topics):
        """A SUB on the events socket, known to be live; its first frames are
        probe events (topic group.*), which readers skip."""
        sock = self.ctx.socket(zmq.SUB)
        sock.setsockopt(zmq.LINGER, 0)
        for topic in topics + ("group.created",):
            sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        sock.connect(f"ipc://{self.engine.run_dir}/events.sock")

        def live():
            while sock.poll(20):
                if sock.recv_multipart()[0] == b"group.created":
                    return True
            return False

        self.probe_events(live)
        return sock


class Producer:
    def __init__(self, endpoint):
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.PUSH)
        self.sock.setsockopt(zmq.LINGER, 5000)
        self.sock.connect(endpoint)

    def send(self, records):
        self.sock.send(msgpack.packb(records))

    def send_raw(self, data):
        self.sock.send(data)

    def close(self):
        self.sock.close()


class EngineTest(unittest.TestCase):
    engine = None

    def start_engine(self, config, **kw):
        self.engine = Engine(config).start(**kw)
        self.addCleanup(self._dump_and_cleanup)
        return self.engine

    def start_admin_engine(self, engine_extra=""):
        """droverd with no pipeline and the HTTP admin on a free port, ready:
        sets self.engine, self.admin and self.http_port."""
        self.http_port = free_port()
        self.start_engine(engine_yaml(engine_extra=engine_extra).replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()
        return self.engine

    def _dump_and_cleanup(self):
        if self.engine is None:
            return
        result = getattr(getattr(self, "_outcome", None), "result", None)
        failed = result is not None and any(t is self for t, _ in result.failures + result.errors)
        self.engine.stop()
        if failed or os.environ.get("DROVER_TEST_VERBOSE"):
            print("---- droverd log ----")
            print(self.engine.log_text()[-int(os.environ.get("DROVER_TEST_LOG_BYTES", "20000")):])
        shutil.rmtree(self.engine.dir, ignore_errors=True)
