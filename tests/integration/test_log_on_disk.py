"""The disk buffer's log on disk (docs/operations.md, "The log on disk"
and "Damage") through the real binaries: what a crash, a bad disk or an
older drover leaves in a slot is read back, cut where it is damaged and
kept in quarantine, and every intact acknowledged record reaches the
backend."""

import glob
import os
import re
import signal
import struct
import unittest

import msgpack

from harness import Admin, wait_until
from test_durability import RECORDS_PER_REQUEST, DurabilityBase, Sender, segments, spares


def entries(path):
    """(offset, length) of each entry of a segment: 28-byte headers (length,
    CRC32C, number, time, records), numbered on from the file's name."""
    found, at, expect = [], 0, int(os.path.basename(path).split(".")[0])
    with open(path, "rb") as f:
        data = f.read()
    while at + 28 <= len(data):
        length, number = struct.unpack_from("<I", data, at)[0], struct.unpack_from("<Q", data, at + 8)[0]
        if number != expect or at + 28 + length > len(data):
            break
        found.append((at, 28 + length))
        at += 28 + length
        expect += 1
    return found



class LogOnDisk(DurabilityBase):
    def test_a_torn_tail_and_a_flipped_byte_are_cut_into_quarantine_and_the_rest_replayed(self):
        #  Heartbeats 3 s apart: the first after the restart, which carries the
        #  damage found at open, comes well after the event subscription.
        config = self.config(buffer="{type: disk, max_bytes: 4194304}", cores=1).replace(
            "engine:\n", "engine:\n  heartbeat_interval_ms: 3000\n", 1)
        engine = self.start_engine(config)
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        self.capture.gate.clear()
        sender = Sender(self.otlp_port, "damage")
        sender.start()
        slot = os.path.join(engine.run_dir, "buffer", "default", "durable")
        wait_until(lambda: len(segments(slot, "*/*")) >= 4, 30, "four log segments")
        engine.signal(signal.SIGKILL)
        engine.wait_exit(10)
        sender.stop()
        found = sorted(segments(slot, "*/*"))
        newest, middle = found[-1], found[len(found) // 2]
        middle_bytes = os.path.getsize(middle)
        lengths = [length for p in found for _, length in entries(p)]
        entry_bytes = sum(lengths) / max(1, len(lengths))
        at, length = entries(newest)[-1]
        with open(newest, "r+b") as f:  # a crash in the middle of the last entry: its end never written
            f.seek(at + length - 7)
            f.write(b"\0" * 7)
        with open(middle, "r+b") as f:  # a bad sector: one entry's bytes changed
            f.seek(os.path.getsize(middle) // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0x5A]))
        self.capture.gate.set()
        engine.log.close()
        engine.start()
        admin.wait_ready(20)
        events = admin.subscribe("buffer.")
        self.assertTrue(events.poll(20000), "a buffer.damaged event")
        topic, payload = events.recv_multipart()
        damage = msgpack.unpackb(payload)
        events.close()
        self.assertEqual(topic, b"buffer.damaged")
        self.assertGreater(damage["torn_bytes"], 0)
        final = wait_until(lambda: (lambda s: s if s and s["buffer"]["corrupt_segments"] >= 1
                                    and s["buffer"]["records"] == 0 else None)(self.status(admin)),
                           60, "the log replayed, the damage reported")
        self.assertEqual(final["buffer"]["corrupt_segments"], 1, final["buffer"])
        quarantine = glob.glob(os.path.join(engine.run_dir, "buffer", "quarantine", "default", "durable", "*", "*"))
        self.assertEqual(sorted(os.path.basename(q).split("-")[0] for q in quarantine), ["bad", "torn"])
        text = engine.log_text()
        self.assertRegex(text, r"torn_bytes=[1-9]")
        self.assertRegex(text, r"disk buffer damaged")
        #  What was intact arrived: all but the entries after the flipped byte
        #  in its segment and the torn one.
        delivered = set(sender.acked) & self.delivered()
        corrupt_bytes = int(re.search(r"corrupt_bytes=(\d+)", text).group(1))
        self.assertLess(corrupt_bytes, middle_bytes)  # cut at the bad entry, not before
        lost_at_most = int((corrupt_bytes / (0.8 * entry_bytes) + 2) * RECORDS_PER_REQUEST)
        self.assertLess(lost_at_most, len(sender.acked) / 2)
        self.assertGreaterEqual(len(delivered), len(sender.acked) - lost_at_most,
                                f"acked {len(sender.acked)}, entry {entry_bytes:.0f} B, answers {sender.answers}")
        self.assertGreater(final["buffer"]["replayed_records"], 0)

    def test_a_log_an_older_drover_left_is_read_once_after_the_upgrade(self):
        #  What a drover before recycling left (docs/operations.md, "The log
        #  on disk"): .wal segments ending at their file's end, no spares, no
        #  settled mark. Made here from this drover's own log, killed with
        #  the backend stalled: each segment cut at its entries' end.
        engine = self.start_engine(self.config(cores=1))
        Admin(engine, self.http_port).wait_ready(20)
        self.capture.gate.clear()
        sender = Sender(self.otlp_port, "old")
        sender.start()
        wait_until(lambda: len(sender.acked) >= 1000, 30, "requests acknowledged with the backend stalled")
        engine.signal(signal.SIGKILL)
        engine.wait_exit(10)
        sender.stop()
        root = os.path.join(engine.run_dir, "buffer", "default", "durable")
        for slot in glob.glob(f"{root}/*"):
            for path in segments(slot, "*"):
                found = entries(path)
                with open(path, "rb") as f:
                    data = f.read(found[-1][0] + found[-1][1] if found else 0)
                os.unlink(path)
                if data:
                    with open(path[:-len(".log")] + ".wal", "wb") as f:
                        f.write(data)
            for path in spares(slot) + glob.glob(f"{slot}/settled"):
                os.unlink(path)
        self.assertTrue(segments(root, "*/*.wal"), "no log to upgrade from")
        self.capture.gate.set()
        engine.log.close()
        engine.start()
        admin = Admin(engine, self.http_port)
        admin.wait_ready(20)
        wait_until(lambda: not set(sender.acked) - self.delivered(), 60,
                   f"every one of {len(sender.acked)} acknowledged records at the backend")
        wait_until(lambda: (lambda s: s and s["buffer"]["records"] == 0 and s["buffer"]["replayed_records"] > 0)(
            self.status(admin)), 30, "the old log read back and settled")
        #  Read once: the .wal segments are recycled, new input goes to .log.
        wait_until(lambda: not glob.glob(f"{root}/*/*.wal"), 30, "the old segments recycled")
        more = Sender(self.otlp_port, "new")
        more.start()
        wait_until(lambda: len(more.acked) >= 100, 30, "new input taken")
        more.stop()
        self.assertTrue(segments(root, "*/*.log"))
        self.assertEqual(self.status(admin)["buffer"]["corrupt_segments"], 0)


if __name__ == "__main__":
    unittest.main()
