"""A throwaway supervisord for the baselines: its own config, socket and logs
in a temporary directory, driven over its XML-RPC socket or supervisorctl."""

import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import xmlrpc.client

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import wait_until  # noqa: E402


class UnixTransport(xmlrpc.client.Transport):
    def __init__(self, path):
        super().__init__()
        self.path = path

    def make_connection(self, host):
        conn = http.client.HTTPConnection("localhost")
        conn.sock = socket.socket(socket.AF_UNIX)
        conn.sock.connect(self.path)
        return conn


class Supervisord:
    """programs: {name: (command, autostart)}."""

    def __init__(self, programs):
        self.dir = tempfile.mkdtemp(prefix="drv-sup-")
        self.conf = os.path.join(self.dir, "supervisord.conf")
        with open(self.conf, "w") as f:
            f.write(f"[supervisord]\nnodaemon=true\nlogfile={self.dir}/s.log\npidfile={self.dir}/s.pid\n"
                    f"[unix_http_server]\nfile={self.dir}/s.sock\n"
                    f"[supervisorctl]\nserverurl=unix://{self.dir}/s.sock\n"
                    "[rpcinterface:supervisor]\n"
                    "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n")
            for name, (command, autostart) in programs.items():
                f.write(f"[program:{name}]\ncommand={command}\nautostart={str(autostart).lower()}\n"
                        f"autorestart=true\nstartsecs=0\nstopsignal=TERM\n"
                        f"stdout_logfile={self.dir}/{name}.log\nredirect_stderr=true\n")
        self.proc = None
        self.rpc = None

    def start(self):
        self.proc = subprocess.Popen(["supervisord", "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_until(lambda: os.path.exists(f"{self.dir}/s.sock"), 30, "supervisord socket")
        self.rpc = xmlrpc.client.ServerProxy("http://localhost", transport=UnixTransport(f"{self.dir}/s.sock"))
        wait_until(self._running, 30, "supervisord up")
        return self

    def _running(self):
        #  Its socket is bound before it listens: refused meanwhile, not an error.
        try:
            return self.rpc.supervisor.getState()["statename"] == "RUNNING"
        except ConnectionRefusedError:
            return False

    def ctl(self, *args):
        """supervisorctl, as an operator or a deploy script runs it."""
        return subprocess.run(["supervisorctl", "-c", self.conf, *args], capture_output=True, text=True,
                              timeout=60, check=True).stdout

    def log(self, name):
        with open(f"{self.dir}/{name}.log", errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)  # supervisord stops its programs first
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["pkill", "-f", f"supervisord -c {self.conf}"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
