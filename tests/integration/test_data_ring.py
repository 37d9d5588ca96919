"""The data ring from the broker to an instance (docs/architecture.md, "The
data ring"), through the real binaries: the broker maps the ring each
instance offers; batches keep the order they were sent in, also when some
are too large for the ring and cross over the socket between others; an
instance killed and started again offers a new ring and nothing is lost;
and with DROVER_DATA_RING=off everything goes over the socket as before.
The broker trusts no position the instance can write (issue 47): a head
one byte short of the ring's end, or a tail past the head, written into
the instance's ring from outside, neither crashes the broker nor loses a
record, and the ring cannot be shrunk under the broker's mapping.
The ring's own protocol (wrap, full, too large, the doorbell's flag) is
tests/unit/test_ring.c's: here an idle instance also wakes once a second
for its handover scan, so a lost doorbell would only slow these tests."""

import os
import signal
import struct
import unittest

from harness import EngineTest, Producer, children_of, cmdline, free_port, read_ndjson, wait_until, zmq_file_spec

BIG = 3 * 1024 * 1024  # over half of the 4 MiB ring: it never fits, it crosses over the socket


class RingEngine(EngineTest):
    """droverd with one 1-core pipeline: receiver:zmq -> exporter:file."""
    env = {}

    def setUp(self):
        self.http_port = free_port()
        from harness import Admin, engine_yaml
        self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)), env=self.env)
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()
        self.port = free_port()
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.path = f"{self.engine.out_dir}/out.ndjson"
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p",
                                          body=zmq_file_spec(self.endpoint, self.path, cores=1))
        self.assertEqual(status, 200, body)
        self.engine.wait_instances(["default/p@1#0"])
        self.producer = Producer(self.endpoint)
        self.addCleanup(self.producer.close)

    def seqs(self):
        #  killed: an instance SIGKILLed mid-write leaves its line cut short (the next goes on from a new line)
        return [r["seq"] for r in read_ndjson(self.path, killed=True)] if os.path.exists(self.path) else []

    def send_mixed(self, first, rounds):
        """rounds x (100 batches of 5 records, then one batch too large for
        the ring): the seq numbers sent, in order."""
        seq = first
        for _ in range(rounds):
            for _ in range(100):
                self.producer.send([{"seq": seq + i} for i in range(5)])
                seq += 5
            self.producer.send([{"seq": seq, "blob": "x" * BIG}])
            seq += 1
        return list(range(first, seq))


class DataRing(RingEngine):
    def test_batches_keep_their_order_across_the_ring_and_the_socket(self):
        if not self.env:
            self.engine.wait_log(r"data ring mapped instance=default/p@1#0 bytes=4194304")
        sent = self.send_mixed(0, 3)
        wait_until(lambda: len(self.seqs()) >= len(sent), 30, "every record")
        self.assertEqual(self.seqs(), sent, "in the order sent, each once")

    def test_an_instance_killed_offers_a_new_ring_and_loses_nothing(self):
        if self.env:
            self.skipTest("no ring to offer")
        self.engine.wait_log(r"data ring mapped instance=default/p@1#0")
        sent = self.send_mixed(0, 1)
        wait_until(lambda: len(self.seqs()) >= len(sent), 30, "the first records")
        os.kill(self.engine.instances()["default/p@1#0"], signal.SIGKILL)
        self.engine.wait_log(r"data ring mapped instance=default/p@1#0", count=2, timeout=20)
        more = self.send_mixed(len(sent), 1)
        wait_until(lambda: set(self.seqs()) >= set(sent + more), 30, "every record, at least once")
        self.assertNotIn("data ring not mapped", self.engine.log_text())

    def ring_of(self, instance):
        """The instance's ring, opened through /proc as the broker opens it."""
        pid = self.engine.instances()[instance]
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if "drover-data-ring" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                ring = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR)
                self.addCleanup(os.close, ring)
                return ring
        self.fail("no data ring")

    def broker(self):
        return next(c for c in children_of(self.engine.pid) if cmdline(c) == "drover-broker")

    def test_positions_written_by_the_instance_never_crash_the_broker(self):
        if self.env:
            self.skipTest("no ring")
        self.engine.wait_log(r"data ring mapped instance=default/p@1#0")
        broker = self.broker()
        ring = self.ring_of("default/p@1#0")
        with self.assertRaises(PermissionError, msg="sealed: it cannot shrink under the broker's mapping"):
            os.ftruncate(ring, 4096)
        os.pwrite(ring, struct.pack("<Q", 4 * 1024 * 1024 - 1), 64)  # the head: one byte short of the end
        sent = self.send_mixed(0, 1)
        wait_until(lambda: len(self.seqs()) >= len(sent), 30, "every record")
        os.pwrite(ring, struct.pack("<Q", 1 << 40), 128)  # the tail: far past the head
        more = self.send_mixed(len(sent), 1)
        wait_until(lambda: len(self.seqs()) >= len(sent + more), 30, "every record, over the socket")
        self.assertEqual(sorted(set(self.seqs())), sent + more, "none lost")
        self.engine.wait_log(r"data ring refused, batches go over the socket instance=default/p@1#0")
        self.assertEqual(self.broker(), broker, "the same broker: it never crashed")


class DataRingOff(DataRing):
    env = {"DROVER_DATA_RING": "off"}

    def test_no_ring_is_offered(self):
        self.producer.send([{"seq": 0}])
        wait_until(lambda: self.seqs() == [0], 10, "the record")
        self.assertNotIn("data ring", self.engine.log_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
