"""Debian's prometheus (2.42) as a peer nobody here wrote: started on a free
loopback port with its own storage, the remote-write receiver on, no scrape
unless asked; queried with PromQL over its HTTP API. Stopped by the test;
started again on the same storage to see what it kept."""

import json
import os
import shutil
import subprocess
import tempfile
import time
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

    def stamps(self, selector, window="10m"):
        """The timestamps (ms) of every sample of selector's series within window."""
        url = self.url("/api/v1/query?" + urllib.parse.urlencode({"query": f"{selector}[{window}]"}))
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        return {round(float(t) * 1000) for s in body["data"]["result"] for t, _ in s["values"]}

    def counter(self, name):
        """The sum of one of Prometheus' own counters, from its /metrics."""
        with urllib.request.urlopen(self.url("/metrics"), timeout=10) as r:
            text = r.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name + "{") or line.startswith(name + " "))

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


def _varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data):
    """A protobuf message's (field, value) pairs: varints as ints, lengths as bytes, fixed64 as 8 bytes."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at:at + size], at + size
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield field, value


def write_request(body):
    """A snappy WriteRequest as {series labels (sorted tuple): [timestamps]} (remote write 1.0's fields)."""
    import snappy  # Debian's python3-snappy
    series = {}
    for field, ts in _fields(snappy.uncompress(body)):
        if field != 1:
            continue
        labels, stamps = [], []
        for f, v in _fields(ts):
            if f == 1:
                label = dict(_fields(v))
                labels.append((label.get(1, b"").decode(), label.get(2, b"").decode()))
            elif f == 2:
                stamps.append(dict(_fields(v)).get(2, 0))
        series.setdefault(tuple(sorted(labels)), []).extend(stamps)
    return series


class OrderSink:
    """A remote-write backend that answers slowly (10-40 ms; every fifth
    request 503) and notes what a backend holding series would refuse: a
    series in two requests at once, a sample older than one it took."""

    def __init__(self):
        import http.server
        import random
        import threading
        self.lock = threading.Lock()
        self.in_flight, self.latest, self.taken = {}, {}, 0
        self.overlaps, self.out_of_order = [], []
        self.most_at_once = self.now = self.requests = self.refused = 0
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                series = write_request(body)
                with sink.lock:
                    sink.requests += 1
                    refuse = sink.requests % 5 == 0
                    sink.now += 1
                    sink.most_at_once = max(sink.most_at_once, sink.now)
                    sink.overlaps += [s for s in series if s in sink.in_flight]
                    for s in series:
                        sink.in_flight[s] = True
                time.sleep(random.uniform(0.01, 0.04))
                with sink.lock:
                    for s, stamps in series.items():
                        sink.in_flight.pop(s, None)
                        if refuse:
                            continue
                        for t in stamps:
                            if t <= sink.latest.get(s, -1):
                                sink.out_of_order.append((s, t))
                            sink.latest[s] = t
                            sink.taken += 1
                    sink.now -= 1
                    sink.refused += refuse
                self.send_response(503 if refuse else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/write"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def samples(self):
        with self.lock:
            return self.taken

    def close(self):
        self.server.shutdown()
        self.server.server_close()
