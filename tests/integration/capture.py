"""A local HTTP server that stands in for a backend the exporters post to:
it keeps every request (path, headers, body gunzipped) and answers with
what the test planned: a list of answers taken in order, then 200. A gate
can hold every answer back until the test opens it. HTTPS with a cert the
test made (openssl) when given one."""

import gzip
import http.server
import ssl
import subprocess
import threading
import time


class Request:
    def __init__(self, path, headers, raw):
        self.path = path
        self.headers = headers
        self.raw = raw
        self.at = time.monotonic()
        self.body = gzip.decompress(raw) if headers.get("Content-Encoding") == "gzip" else raw


class Capture:
    def __init__(self, plan=(), certfile=None, keyfile=None, port=0):
        self.plan = list(plan)          # (status, headers dict, body bytes) answers, in order
        self.requests = []              # every request, answered or not, in arrival order
        self.accepted = []              # the requests answered 2xx
        self.lock = threading.Lock()
        self.gate = threading.Event()   # cleared: answers wait until it is set
        self.gate.set()
        capture = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = Request(self.path, dict(self.headers), raw)
                with capture.lock:
                    capture.requests.append(request)
                    answer = capture.plan.pop(0) if capture.plan else (200, {}, b"")
                capture.gate.wait(60)
                status, headers, body = answer
                if 200 <= status < 300:
                    with capture.lock:
                        capture.accepted.append(request)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the exporter is gone (a test killed it): it got the request all the same

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        if certfile:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile, keyfile)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.scheme = "https" if certfile else "http"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path=""):
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def bodies(self):
        with self.lock:
            return [r.body for r in self.accepted]

    def close(self):
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


def self_signed_cert(directory):
    """A certificate for 127.0.0.1 and its key, made with openssl; returns
    (certfile, keyfile)."""
    cert, key = f"{directory}/cert.pem", f"{directory}/key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key
