"""An OpAMP server for the tests (plain HTTP transport): Python's
http.server and python3-protobuf with classes protoc generates from
drover's proto/opamp/opamp.proto. It keeps every AgentToServer it gets and
answers each with the next scripted reply: a ServerToAgent (given as a
callable that fills one in), an HTTP status, raw bytes, or nothing scripted
(an empty ServerToAgent)."""

import importlib
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "../../proto")
_module = []


def opamp_pb():
    """The generated module (opamp_pb2)."""
    if not _module:
        out = tempfile.mkdtemp(prefix="drover-opamp-pb-")
        subprocess.run(["protoc", f"--proto_path={PROTO}", f"--python_out={out}", "opamp/opamp.proto"], check=True)
        sys.path.insert(0, out)
        _module.append(importlib.import_module("opamp.opamp_pb2"))
    return _module[0]


class OpampServer:
    def __init__(self, port=0, tls=None):
        pb = opamp_pb()
        self.messages = []        # AgentToServer, in order
        self.script = []          # replies to give first: callable(ServerToAgent), int (HTTP status), or bytes
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                message = pb.AgentToServer.FromString(body)
                with server.lock:
                    server.messages.append((message, dict(self.headers)))
                    step = server.script.pop(0) if server.script else None
                if isinstance(step, int):
                    self.send_response(step)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if isinstance(step, bytes):
                    payload = step
                else:
                    answer = pb.ServerToAgent(instance_uid=message.instance_uid)
                    if step:
                        step(answer)
                    payload = answer.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        if tls:  # (cert_file, key_file): HTTPS
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1/opamp"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def received(self):
        with self.lock:
            return [m for m, _ in self.messages]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
