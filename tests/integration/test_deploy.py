"""How drover is deployed: systemd's notify protocol (a datagram socket of
this test's stands in for systemd), and the deployment files under deploy/."""

import os
import signal
import socket
import tempfile
import time
import unittest

from harness import Admin, EngineTest, engine_yaml, free_port, wait_until

PIPELINE = """
      gen:
        nodes:
          g: { type: receiver:generator, config: { rate: 10 }, to: [out] }
          out: { type: exporter:file, config: { path: "{OUT}/gen.ndjson" } }
"""


class FakeSystemd:
    """A NOTIFY_SOCKET: collects every datagram droverd sends, with its arrival time."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="drv-notify-")
        self.path = os.path.join(self.dir, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.05)
        self.messages = []  # (mono time, {key: value})

    def collect(self):
        try:
            while True:
                data = self.sock.recv(4096).decode()
                fields = dict(line.split("=", 1) for line in data.splitlines() if "=" in line)
                self.messages.append((time.monotonic(), fields))
        except socket.timeout:
            pass
        return self.messages

    def wait_for(self, key, value, after=0, timeout=10):
        """Index of the first message after `after` that sets key=value."""
        def found():
            for i, (_, fields) in enumerate(self.collect()[after:], after):
                if fields.get(key) == value:
                    return i + 1
            return None
        return wait_until(found, timeout, f"{key}={value} on NOTIFY_SOCKET") - 1

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


class Systemd(EngineTest):
    def test_ready_reloading_stopping_and_watchdog_over_notify_socket(self):
        systemd = FakeSystemd()
        self.addCleanup(systemd.close)
        http = free_port()
        engine = self.start_engine(engine_yaml(pipelines=PIPELINE).replace("HTTP", str(http)),
                                   env={"NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "200000"})
        admin = Admin(engine, http)
        ready = systemd.wait_for("READY", "1")
        # READY=1 means startup settled: the config's pipeline is up by then.
        status, body, _ = admin.http("GET", "/readyz")
        self.assertEqual(status, 200, body)
        self.assertIn("1 pipelines running", systemd.messages[ready][1]["STATUS"])
        engine.wait_log(r"systemd watchdog enabled interval_ms=100")

        # Watchdog pings every half of WATCHDOG_USEC, from the main loop.
        first = len(systemd.collect())
        wait_until(lambda: sum(1 for _, f in systemd.collect()[first:] if f.get("WATCHDOG") == "1") >= 5, 5,
                   "five watchdog pings")
        pings = [t for t, f in systemd.messages[first:] if f.get("WATCHDOG") == "1"]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        self.assertLess(max(gaps), 0.2, f"pings {gaps} must come well within WATCHDOG_USEC")

        # SIGHUP: RELOADING=1 (with MONOTONIC_USEC), then READY=1 once settled.
        mark = len(systemd.collect())
        engine.signal(signal.SIGHUP)
        reloading = systemd.wait_for("RELOADING", "1", after=mark)
        self.assertTrue(systemd.messages[reloading][1].get("MONOTONIC_USEC", "").isdigit())
        self.assertGreater(systemd.wait_for("READY", "1", after=reloading), reloading)

        # SIGTERM: STOPPING=1 before droverd drains and exits 0.
        mark = len(systemd.collect())
        engine.signal(signal.SIGTERM)
        systemd.wait_for("STOPPING", "1", after=mark)
        self.assertEqual(engine.wait_exit(), 0)

    def test_without_notify_socket_nothing_is_sent_and_nothing_breaks(self):
        http = free_port()
        engine = self.start_engine(engine_yaml(pipelines=PIPELINE).replace("HTTP", str(http)))
        Admin(engine, http).wait_ready()
        self.assertNotIn("sd_notify", engine.log_text())
        self.assertNotIn("watchdog", engine.log_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
