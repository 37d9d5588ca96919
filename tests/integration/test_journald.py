"""receiver:journald through the real binaries (issue 38), against a
journal systemd's own systemd-journal-remote writes from export format:
MESSAGE, PRIORITY and the realtime mapped, the other fields attributes;
units and matches; the cursor kept across a SIGKILL of droverd and every
child, so that nothing is read twice or lost; a field repeated in one entry
(journald's native protocol lets any local user log MESSAGE=a MESSAGE=b)
becomes an array of its values, a thousand of them included; an input
closes at 4 MiB of values, so a journal of large entries never becomes one
huge input."""

import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import Admin, EngineTest, engine_yaml, free_port, proc_status, read_ndjson, wait_until
from hostile import SANITIZED

JOURNAL_REMOTE = next((p for p in ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")
                       if os.path.exists(p)), None)
BOOT = "0123456789abcdef0123456789abcdef"


def export(entries):
    """Journal export format: one block of FIELD=value lines per entry."""
    out = []
    for n, fields in entries:
        out.append(f"__REALTIME_TIMESTAMP={1795687200000000 + n}\n__MONOTONIC_TIMESTAMP={1000 + n}\n_BOOT_ID={BOOT}\n")
        out.append("".join(f"{k}={v}\n" for k, v in fields.items()) + "\n")
    return "".join(out).encode()


@unittest.skipUnless(JOURNAL_REMOTE, "systemd-journal-remote is not installed (scripts/install-deps.sh test)")
class Journald(EngineTest):
    def setUp(self):
        self.http_port = free_port()
        self.journals = tempfile.mkdtemp(prefix="drover-journal-")
        self.addCleanup(shutil.rmtree, self.journals, True)
        self.written = 0

    def write(self, entries):
        """Appends entries to the journal file, as systemd-journal-remote writes it."""
        done = subprocess.run([JOURNAL_REMOTE, f"--output={self.journals}/remote.journal", "--split-mode=none", "-"],
                              input=export(entries), capture_output=True, timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)

    def start(self, config, heartbeat_ms=100):
        pipelines = f"""
      journal:
        cores: {{count: 2}}
        nodes:
          in: {{type: "receiver:journald", config: {config}, to: [out]}}
          out: {{type: "exporter:file", config: {{path: "{{OUT}}/out-{{core}}.ndjson"}}}}
"""
        engine = self.start_engine(engine_yaml(pipelines, f"  heartbeat_interval_ms: {heartbeat_ms}\n")
                                   .replace("HTTP", str(self.http_port)))
        Admin(engine, self.http_port).wait_ready(20)
        return engine

    def out(self):
        rows = []
        for path in glob.glob(os.path.join(self.engine.out_dir, "out-*.ndjson")):
            rows += read_ndjson(path, killed=True)  # a test here kills everything, maybe mid-write
        return rows

    def entry(self, n, unit="shop.service", priority=3):
        return n, {"MESSAGE": f"message {n}", "PRIORITY": priority, "_SYSTEMD_UNIT": unit, "_PID": 40 + n,
                   "_COMM": "shop", "_HOSTNAME": "node-1", "SYSLOG_IDENTIFIER": "shop"}

    def test_a_directory_without_a_journal_is_said_not_silent(self):
        self.start(f'{{directory: "{self.journals}"}}')  # nothing written: no journal file
        self.engine.wait_log(r"WARN worker\[default/journal@1#\d\]: no journal files node=in directory=" +
                             re.escape(self.journals) + r" hint=\"is the journal mounted there\?\"", 15)

    def test_a_field_repeated_in_an_entry_becomes_an_array(self):
        export_text = (b"__REALTIME_TIMESTAMP=1795687200000000\n__MONOTONIC_TIMESTAMP=1000\n_BOOT_ID=" + BOOT.encode()
                       + b"\nMESSAGE=a\nMESSAGE=b\nTAG=x\nPRIORITY=4\n\n"
                       + b"__REALTIME_TIMESTAMP=1795687200000001\n__MONOTONIC_TIMESTAMP=1001\n_BOOT_ID=" + BOOT.encode()
                       + b"\n" + b"".join(b"MESSAGE=m%d\n" % n for n in range(1000)) + b"\n"
                       + b"__REALTIME_TIMESTAMP=1795687200000002\n__MONOTONIC_TIMESTAMP=1002\n_BOOT_ID=" + BOOT.encode()
                       + b"\nMESSAGE=after\n\n")
        done = subprocess.run([JOURNAL_REMOTE, f"--output={self.journals}/remote.journal", "--split-mode=none", "-"],
                              input=export_text, capture_output=True, timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.start(f'{{directory: "{self.journals}", start_at: beginning}}')
        rows = wait_until(lambda: (lambda o: o if len(o) >= 3 else None)(self.out()), 15, "3 entries")
        self.assertEqual(rows[0]["body"], ["a", "b"], "both values, in order")
        self.assertEqual(rows[0]["attributes"], {"TAG": "x", "_BOOT_ID": BOOT}, "no heap bytes, nothing else")
        self.assertEqual(rows[0]["severity_text"], "warning")
        self.assertEqual(rows[1]["body"], [f"m{n}" for n in range(1000)])
        self.assertEqual(rows[2]["body"], "after")
        status = Admin(self.engine, self.http_port).http("GET", "/api/v1/groups/default/pipelines/journal/status")[1]
        self.assertEqual([i["restarts"] for i in status["instances"]], [0, 0])

    def test_an_input_closes_at_four_mebibytes_so_large_entries_stay_small_in_memory(self):
        big = os.urandom(450 * 1024).hex()  # 900 KB a MESSAGE, not compressible: 60 of them are 54 MB
        self.write([(n, {"MESSAGE": f"{n} {big}"}) for n in range(60)])
        #  Heartbeats as deployed: 100 ms is missed by a busy machine while
        #  it writes megabytes, and a restart reads the unsettled again.
        self.start(f'{{directory: "{self.journals}", start_at: beginning}}', heartbeat_ms=1000)
        rows = wait_until(lambda: (lambda o: o if len(o) >= 60 else None)(self.out()), 30, "60 large entries")
        self.assertEqual(sorted(int(r["body"].split()[0]) for r in rows), list(range(60)))
        if SANITIZED:
            return  # ASan keeps what is freed in quarantine: the peak says nothing
        peak = max(int(proc_status(pid, "VmHWM").split()[0]) for pid in self.engine.instances().values())
        #  One input of all 60 (1,000 entries an input before) held them,
        #  their records and their batch at once: 147 MB here.
        self.assertLess(peak, 100 * 1024, f"an instance peaked at {peak} kB")

    def test_fields_mapped_and_the_cursor_kept_across_a_kill(self):
        self.write([self.entry(0), self.entry(1, unit="other.service"), self.entry(2, priority=6)])
        engine = self.start(f'{{directory: "{self.journals}", units: [shop.service], start_at: beginning}}')
        rows = wait_until(lambda: (lambda o: o if len(o) >= 2 else None)(self.out()), 15, "2 entries of shop.service")
        first = next(r for r in rows if r["body"] == "message 0")
        self.assertEqual(first["severity_number"], 17)
        self.assertEqual(first["severity_text"], "err")
        self.assertEqual(first["time_unix_nano"], 1795687200000000000)
        #  When drover read it (issue 49): within the test's own minutes.
        self.assertLess(abs(first["observed_time_unix_nano"] - time.time_ns()), 600 * 10**9)
        self.assertEqual(first["attributes"]["_SYSTEMD_UNIT"], "shop.service")
        self.assertEqual(first["attributes"]["_PID"], "40")
        self.assertEqual(first["attributes"]["SYSLOG_IDENTIFIER"], "shop")
        self.assertNotIn("MESSAGE", first["attributes"])
        self.assertEqual(sorted(r["body"] for r in rows), ["message 0", "message 2"], "other.service not matched")
        self.assertEqual(len([p for p in glob.glob(os.path.join(self.engine.out_dir, "out-*.ndjson"))
                              if os.path.getsize(p)]), 1, "one instance of the two reads")
        cursor = os.path.join(engine.run_dir, "buffer", "default", "journal", "checkpoints", "journald.in.json")
        wait_until(lambda: os.path.exists(cursor), 5, "the cursor saved")
        engine.signal(signal.SIGKILL)  # droverd and every child
        engine.wait_exit(10)
        self.write([self.entry(3), self.entry(4)])
        engine.log.close()
        engine.start()
        Admin(engine, self.http_port).wait_ready(20)
        rows = wait_until(lambda: (lambda o: o if len(o) >= 4 else None)(self.out()), 15, "the 2 entries written while down")
        self.assertEqual(sorted(r["body"] for r in rows), ["message 0", "message 2", "message 3", "message 4"],
                         "each once: read on from the cursor")


if __name__ == "__main__":
    unittest.main()
