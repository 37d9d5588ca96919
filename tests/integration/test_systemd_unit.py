"""The systemd unit drover ships (deploy/systemd): Type=notify, reload by
SIGHUP, a stop that outlasts the drain, checked by systemd-analyze; the
user it runs as made by systemd-sysusers in a scratch root."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

from harness import BIN
from test_deploy import DEPLOY, read


class SystemdUnit(unittest.TestCase):
    def test_unit_is_type_notify_reloads_with_hup_and_stops_after_the_drain(self):
        text = read(DEPLOY, "systemd/droverd.service")
        keys = dict(re.findall(r"(?m)^(\w+)=(.*)$", text))
        self.assertEqual(keys["Type"], "notify")
        self.assertEqual(keys["NotifyAccess"], "main")
        self.assertIn("-HUP $MAINPID", keys["ExecReload"])
        self.assertEqual(keys["KillMode"], "mixed", "SIGTERM to droverd alone: it drains its children")
        shutdown = yaml.safe_load(read(DEPLOY, "drover.yaml"))["engine"]["shutdown_timeout_secs"]
        self.assertGreater(int(keys["TimeoutStopSec"].rstrip("s")), shutdown)
        self.assertTrue(keys["WatchdogSec"])
        unit_dir = tempfile.mkdtemp(prefix="drv-unit-")
        self.addCleanup(shutil.rmtree, unit_dir, True)
        with open(os.path.join(unit_dir, "droverd.service"), "w") as f:
            f.write(text.replace("/usr/local/bin/droverd", f"{BIN}/droverd"))
        verify = subprocess.run(["systemd-analyze", "verify", os.path.join(unit_dir, "droverd.service")],
                                capture_output=True, text=True)
        self.assertEqual(verify.returncode, 0, verify.stderr)
        self.assertIn("ReadWritePaths=", text, "ProtectSystem=strict: where file outputs may write is said")

    def test_the_user_the_unit_runs_as_is_created_by_sysusers(self):
        """User=drover: systemd-sysusers makes it from drover.sysusers, in a
        scratch root here (a real one on the host)."""
        unit = dict(re.findall(r"(?m)^(\w+)=(.*)$", read(DEPLOY, "systemd/droverd.service")))
        root = tempfile.mkdtemp(prefix="drv-sysroot-")
        self.addCleanup(shutil.rmtree, root, True)
        os.makedirs(os.path.join(root, "etc"))
        made = subprocess.run(["systemd-sysusers", f"--root={root}", os.path.join(DEPLOY, "systemd/drover.sysusers")],
                              capture_output=True, text=True)
        self.assertEqual(made.returncode, 0, made.stderr)
        users = {line.split(":")[0]: line.split(":") for line in read(root, "etc/passwd").splitlines()}
        self.assertIn(unit["User"], users)
        self.assertEqual(users[unit["User"]][5], "/var/lib/drover")
        self.assertIn(unit["Group"], read(root, "etc/group"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
