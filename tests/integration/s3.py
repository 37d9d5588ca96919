"""An S3 for the tests, from npm packages nobody here wrote (tests/otel-js,
installed by npm ci from its lock file): s3rver behind a front that checks
SigV4 with the AWS SDK's own signer and stores only whole bodies
(tests/otel-js/s3_front.js), read back with the official AWS SDK for
JavaScript (tests/otel-js/s3_read.js). Stopped and started again on the
same port and storage, to be an S3 that went away."""

import json
import os
import shutil
import subprocess
import tempfile

from harness import free_port, wait_until
from test_otel_sdk import CLIENT

KEY_ID, SECRET = "AKIADROVERTEST000001", "drover-test-secret-key/0123456789abcdef"


class S3:
    def __init__(self, buckets=("archive",), delay_ms=0, sink=False, faults=None, tls=False):
        self.delay_ms, self.sink, self.faults = delay_ms, sink, dict(faults or {})
        self.dir = tempfile.mkdtemp(prefix="drv-s3-")
        self.cert = None
        if tls:  # HTTPS with a certificate for 127.0.0.1 made here (self.cert: the CA a client needs)
            from capture import self_signed_cert
            self.cert, key = self_signed_cert(self.dir)
            self.faults.update(S3_FRONT_TLS_CERT=self.cert, S3_FRONT_TLS_KEY=key)
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.data)
        self.port = free_port()
        self.buckets = list(buckets)
        self.proc = None
        self.start()

    @property
    def endpoint(self):
        return f"{'https' if self.cert else 'http'}://127.0.0.1:{self.port}"

    def start(self):
        self.log = open(os.path.join(self.dir, "front.log"), "a")
        self.proc = subprocess.Popen(
            ["node", os.path.join(CLIENT, "s3_front.js"), str(self.port), self.data, json.dumps({KEY_ID: SECRET})]
            + self.buckets, stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=dict(os.environ, S3_FRONT_DELAY_MS=str(self.delay_ms), S3_FRONT_SINK="1" if self.sink else "0",
                     **self.faults))
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            raise AssertionError(f"the S3 front did not start: {line!r} {self.log_text()[-2000:]}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None
        self.log.close()

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_text(self):
        with open(os.path.join(self.dir, "front.log")) as f:
            return f.read()

    def read(self, bucket="archive", prefix=""):
        """Every object of bucket, downloaded by the AWS SDK: ({key: bytes}, multipart uploads begun and
        neither completed nor aborted, as the front counts them)."""
        out = tempfile.mkdtemp(prefix="drv-s3-read-", dir=self.dir)
        done = subprocess.run(["node", os.path.join(CLIENT, "s3_read.js"), self.endpoint, bucket, out, KEY_ID, SECRET]
                              + ([prefix] if prefix else []), capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, **({"NODE_EXTRA_CA_CERTS": self.cert} if self.cert else {})))
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines or "error" in lines[-1]:
            raise AssertionError(f"reading s3://{bucket}: {done.stdout[-1000:]} {done.stderr[-1000:]}")
        objects = {}
        for line in lines[:-1]:
            with open(os.path.join(out, line["key"]), "rb") as f:
                objects[line["key"]] = f.read()
        shutil.rmtree(out, ignore_errors=True)
        import ssl
        import urllib.request
        context = ssl.create_default_context(cafile=self.cert) if self.cert else None
        with urllib.request.urlopen(f"{self.endpoint}/__front/uploads", timeout=10, context=context) as r:
            return objects, json.load(r)["open"]

    def wait_objects(self, predicate, timeout=30, what="objects", bucket="archive"):
        return wait_until(lambda: (lambda objs: objs if predicate(objs) else None)(self.read(bucket)[0]), timeout,
                          what, interval=0.2)
