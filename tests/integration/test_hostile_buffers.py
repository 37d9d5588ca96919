"""A disk buffer's directory as an attacker or a broken volume leaves it
(docs/security.md, "Disk buffers"): things planted where segments, locks or
quarantine copies go are never followed, never block an instance and never
crash-loop a pipeline; damage gets past a full disk; buffer_dir gets
run_dir's ownership and mode checks. Each case plants its files while
droverd is stopped, starts it, and checks what droverd did to them and that
records still flow, through the real binaries."""

import glob
import os
import subprocess
import tempfile
import unittest

from harness import DROVERD, Engine, EngineTest, engine_yaml, free_port, read_ndjson, wait_until

SEGMENT = "00000000000000000001.wal"
VICTIM_TEXT = b"precious bytes that are nobody's log\n" * 100


class HostileBuffers(EngineTest):
    def setUp(self):
        self.http_port = free_port()
        self.victim_dir = tempfile.mkdtemp(prefix="drv-victim-")
        self.victim = os.path.join(self.victim_dir, "victim")
        with open(self.victim, "wb") as f:
            f.write(VICTIM_TEXT)

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.victim_dir])

    def config(self, engine_extra="", buffer="disk"):
        pipelines = f"""
      durable:
        cores: {{count: 1}}
        nodes:
          in: {{type: "receiver:generator", config: {{rate: 200, record: {{msg: tick}}}}, to: [out]}}
          out: {{type: "exporter:file", config: {{path: "{{OUT}}/durable.ndjson"}}}}
        policies:
          buffer: {{type: {buffer}}}
"""
        return engine_yaml(pipelines, engine_extra).replace("HTTP", str(self.http_port))

    def prepared(self, engine_extra="", buffer="disk"):
        """An engine, configured but not started, whose run_dir exists, and
        the path of its pipeline's first slot (created)."""
        self.engine = Engine(self.config(engine_extra, buffer))
        self.addCleanup(self._dump_and_cleanup)
        os.makedirs(self.engine.run_dir, mode=0o700)
        buffer_dir = os.path.join(self.engine.run_dir, "buffer")
        slot = os.path.join(buffer_dir, "default", "durable", "0.0")
        os.makedirs(slot, mode=0o700)
        return slot

    def flowing(self, at_least=50):
        """Records the generator made reach the file through the buffer."""
        out = os.path.join(self.engine.out_dir, "durable.ndjson")
        wait_until(lambda: len(read_ndjson(out)) >= at_least, 20, f"{at_least} records through the disk buffer")

    def assert_victim_untouched(self):
        with open(self.victim, "rb") as f:
            self.assertEqual(f.read(), VICTIM_TEXT, "a file outside the buffer was changed through a link")

    def quarantine(self):
        return os.path.join(self.engine.run_dir, "buffer", "quarantine", "default", "durable", "0.0")

    def test_a_symlink_planted_as_a_segment_is_set_aside_not_truncated(self):
        slot = self.prepared()
        os.symlink(self.victim, os.path.join(slot, SEGMENT))
        self.engine.start()
        self.flowing()
        self.assert_victim_untouched()
        moved = os.path.join(self.quarantine(), "odd-" + SEGMENT)
        self.assertTrue(os.path.islink(moved), os.listdir(self.quarantine()))
        self.assertFalse(os.path.lexists(os.path.join(slot, SEGMENT)))
        self.assertRegex(self.engine.log_text(), rf"{SEGMENT} is a symbolic link: moved to quarantine as odd-{SEGMENT}")

    def test_a_link_planted_as_a_handover_is_passed_over_never_followed(self):
        #  A memory pipeline's instances look for what drained instances
        #  handed over (handover.*) beside the slots: a link there is refused.
        slot = self.prepared(buffer="memory")
        planted = os.path.join(os.path.dirname(slot), "handover.0.1.1.0")
        os.symlink(self.victim_dir, planted)
        self.engine.start()
        self.flowing()
        self.engine.wait_log(r"handover passed over: .*handover\.0\.1\.1\.0")
        self.assert_victim_untouched()
        self.assertEqual(os.listdir(self.victim_dir), ["victim"], "nothing made or removed through the link")
        self.assertTrue(os.path.islink(planted))

    def test_the_quarantine_copy_never_follows_a_link_planted_under_its_name(self):
        slot = self.prepared()
        with open(os.path.join(slot, SEGMENT), "wb") as f:  # damage: no entry's header adds up
            f.write(b"\xff" * 4096)
        os.makedirs(self.quarantine(), mode=0o700)
        os.symlink(self.victim, os.path.join(self.quarantine(), "bad-" + SEGMENT))
        self.engine.start()
        self.flowing()
        self.assert_victim_untouched()
        with open(os.path.join(self.quarantine(), f"bad-{SEGMENT}.1"), "rb") as f:
            self.assertEqual(f.read(), b"\xff" * 4096)  # the damaged bytes kept beside the planted link

    def test_a_fifo_in_a_sibling_slot_neither_blocks_nor_kills_the_instance(self):
        slot = self.prepared()
        sibling = os.path.join(os.path.dirname(slot), "0.1")
        os.makedirs(sibling, mode=0o700)
        os.mkfifo(os.path.join(sibling, SEGMENT))
        self.engine.start()
        #  The slot scan takes an unheld slot of its own core at once: the FIFO is set aside there.
        self.engine.wait_log(rf"{SEGMENT} is a FIFO: moved to quarantine", 20)
        (pid,) = self.engine.wait_instances(["default/durable@1#0"], 20).values()
        self.flowing(100)
        self.assertEqual(self.engine.instances().get("default/durable@1#0"), pid, "the instance was restarted")
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(self.quarantine()), "0.1", "odd-" + SEGMENT)))

    def test_directories_where_a_segment_and_the_lock_should_be_are_passed_over_by_name(self):
        slot = self.prepared()
        os.makedirs(os.path.join(slot, "lock"))        # a directory where the lock should be
        next_slot = os.path.join(os.path.dirname(slot), "0.1")
        os.makedirs(os.path.join(next_slot, SEGMENT))  # and one named like a segment in the next slot
        self.engine.start()
        self.flowing()
        text = self.engine.log_text()
        self.assertRegex(text, r"buffer slot \S+/0\.0 refused: its lock is a link or a directory; trying the next slot")
        self.assertRegex(text, rf"{SEGMENT} is a directory: moved to quarantine as odd-{SEGMENT}")
        self.assertTrue(os.path.isfile(os.path.join(next_slot, "lock")), "the next slot taken")
        self.assertTrue(os.path.isdir(os.path.join(os.path.dirname(self.quarantine()), "0.1", "odd-" + SEGMENT)))
        self.assertNotRegex(text, r"exit=[1-9]", "no crash loop")
        self.assertEqual(len(self.engine.instances()), 1)

    def test_a_world_writable_buffer_dir_is_refused_by_name(self):
        data = tempfile.mkdtemp(prefix="drv-data-")
        self.addCleanup(subprocess.run, ["rm", "-rf", data])
        buffer_dir = os.path.join(data, "buffer")
        os.mkdir(buffer_dir)
        os.chmod(buffer_dir, 0o1777)
        self.prepared(f"  buffer_dir: {buffer_dir}\n  data_dirs: [{data}, {{OUT}}]\n")
        run = subprocess.run([DROVERD, "-c", self.engine.config_path], capture_output=True, text=True, timeout=20)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn(f"engine.buffer_dir {buffer_dir} is writable by others", run.stderr)
        self.assertFalse(os.path.exists(os.path.join(buffer_dir, "default")), "nothing written into it")

    def test_a_buffer_dir_equal_to_a_data_dir_is_inside_it(self):
        data = tempfile.mkdtemp(prefix="drv-data-")
        self.addCleanup(subprocess.run, ["rm", "-rf", data])
        self.prepared(f"  buffer_dir: {data}\n  data_dirs: [{data}, {{OUT}}]\n")
        self.engine.start()
        self.flowing()
        self.assertTrue(os.path.exists(os.path.join(data, "default", "durable", "0.0", "lock")))

    def test_damage_on_a_full_volume_is_cut_and_counted_and_the_pipeline_starts(self):
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        mount = tempfile.mkdtemp(prefix="drv-tmpfs-")
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mount]).returncode != 0:
            self.skipTest("cannot mount a tmpfs here")
        self.addCleanup(os.rmdir, mount)
        self.addCleanup(subprocess.run, ["umount", "-l", mount])
        self.prepared(f"  buffer_dir: {mount}\n  data_dirs: [{mount}, {{OUT}}]\n")
        slot = os.path.join(mount, "default", "durable", "0.0")
        os.makedirs(slot, mode=0o700)
        os.makedirs(os.path.join(mount, "quarantine", "default", "durable", "0.0"), mode=0o700)
        with open(os.path.join(slot, SEGMENT), "wb") as f:
            f.write(b"\xff" * (1 << 20))  # 1 MiB of damage
        with open(os.path.join(mount, "filler"), "wb", buffering=0) as f:  # the rest of the volume
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        self.engine.start()
        self.engine.wait_log(r"unkept_bytes=1048576", 20)
        self.flowing()
        self.assertEqual(os.listdir(os.path.join(mount, "quarantine", "default", "durable", "0.0")), [],
                         "a half-written copy left in quarantine")
        self.assertNotRegex(self.engine.log_text(), r"code=78")


if __name__ == "__main__":
    unittest.main()
