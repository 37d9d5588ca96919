"""The broker's SYNC and an instance's data ring (docs/architecture.md,
"The data ring"), with the real drover-broker and this test in droverd's
and the instance's places: the test holds droverd's control socket, and a
fake instance offers a ring it made and reads it as drover-worker does.

A SYNC is sent over the socket; a batch written to the ring after it may be
taken before the SYNC is read. When an instance's first credit crossed a
SYNC, the broker fed its ring at once; the instance took those batches,
then answered the SYNC, and the broker counted them as in flight for good:
a window's worth of them and it was never fed again (a restarted instance
under a steady producer, seen once in CI). The broker now feeds an
instance nothing while a SYNC it took is unanswered, and only the answer
to that SYNC, which names it, sets its credit."""

import mmap
import os
import struct
import subprocess
import tempfile
import time
import unittest

import msgpack
import zmq

from harness import BIN, Producer, free_port, wait_until

WINDOW = 16
RING_BYTES = 1 << 20
DATA_OFFSET = 4096  # the page of positions before the data (common/src/drv_ring.c)
HEAD, TAIL = 64, 128
PAD_MARK = 0xFFFFFFFF


def pack(**fields):
    return msgpack.packb({"v": 1, **fields})


class Ring:
    """A data ring made as drover-worker makes it: a sealed memory file, read in place."""

    def __init__(self):
        self.fd = os.memfd_create("drover-data-ring", os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, DATA_OFFSET + RING_BYTES)
        import fcntl
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.map = mmap.mmap(self.fd, DATA_OFFSET + RING_BYTES)
        self.map[0:16] = struct.pack("<QQ", 0x31474E4952565244, RING_BYTES)  # "DRVRING1", its size

    def close(self):
        self.map.close()
        os.close(self.fd)

    def _get(self, at):
        return struct.unpack_from("<Q", self.map, at)[0]

    def take(self):
        """Every entry the broker published, in order: [(header, payload)]."""
        taken = []
        tail = self._get(TAIL)
        while tail != self._get(HEAD):
            offset = tail % RING_BYTES
            hlen, plen = struct.unpack_from("<II", self.map, DATA_OFFSET + offset)
            if hlen == PAD_MARK:
                tail += RING_BYTES - offset
                continue
            start = DATA_OFFSET + offset + 8
            taken.append((msgpack.unpackb(self.map[start:start + hlen]), self.map[start + hlen:start + hlen + plen]))
            tail += (8 + hlen + plen + 7) & ~7
        struct.pack_into("<Q", self.map, TAIL, tail)
        return taken


class BrokerSync(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="drv-sync-")
        self.ctx = zmq.Context.instance()
        self.control = self.ctx.socket(zmq.ROUTER)  # droverd's side
        self.control.setsockopt(zmq.LINGER, 0)
        control = f"ipc://{self.dir}/control.sock"
        self.data = f"ipc://{self.dir}/data.sock"
        self.control.bind(control)
        self.log = open(f"{self.dir}/broker.log", "w+")
        self.broker = subprocess.Popen([f"{BIN}/drover-broker", "--control", control, "--data", self.data],
                                       stdout=self.log, stderr=subprocess.STDOUT)
        self.addCleanup(self._stop)
        self.assertEqual(self.recv_control()["type"], "hello")
        self.front = f"tcp://127.0.0.1:{free_port()}"
        self.send_control(type="pipeline_set", pipeline="g:p", receivers=[{"node": "in", "endpoint": self.front}])
        bound = self.recv_control()
        while bound["type"] == "heartbeat":
            bound = self.recv_control()
        self.assertEqual((bound["type"], bound.get("ok")), ("bound", True), bound)
        self.producer = Producer(self.front)
        self.addCleanup(self.producer.close)

    def _stop(self):
        self.broker.terminate()
        self.broker.wait(10)
        self.control.close()
        self.log.seek(0)
        if any(t is self for t, _ in self._outcome.result.failures + self._outcome.result.errors):
            print(self.log.read())
        self.log.close()

    def send_control(self, **fields):
        self.control.send_multipart([b"broker", pack(**fields)])

    def recv_control(self):
        assert self.control.poll(10000), "nothing from the broker"
        return msgpack.unpackb(self.control.recv_multipart()[1])

    def instance(self):
        """The fake instance's socket, connected; its first credit is sent by the caller."""
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, b"g/p@1#0")
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.data)
        self.addCleanup(sock.close)
        return sock

    def credit(self, sock, ring, **fields):
        sock.send(pack(type="credit", pid=os.getpid(), ring_fd=ring.fd, ring_bytes=RING_BYTES, **fields))

    def assert_quiet(self, ring, seconds, why):
        """Nothing is written to the ring for this long (the old broker wrote within milliseconds)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.assertEqual(ring.take(), [], why)
            time.sleep(0.01)  # pacing the look, not waiting for the broker

    def feed(self, sock, ring, seqs):
        """One turn of drover-worker's loop: what the ring holds, then the
        socket; each batch credited back, each SYNC answered (the broker
        sends another when an answer is a second late). The seqs so far."""
        for header, payload in ring.take():
            self.assertEqual(header["type"], "batch")
            seqs.extend(r["seq"] for r in msgpack.unpackb(payload))
            sock.send(pack(type="credit", n=1, acked=1, reset=False))
        while sock.poll(0):
            frames = sock.recv_multipart()
            header = msgpack.unpackb(frames[0])
            if header["type"] == "batch":
                seqs.extend(r["seq"] for r in msgpack.unpackb(frames[1]))
                sock.send(pack(type="credit", n=1, acked=1, reset=False))
            elif header["type"] == "sync":
                self.credit(sock, ring, n=WINDOW, reset=True, synced=True, sync_id=header["sync_id"])
        return seqs

    def routed_and_synced(self, ring):
        """Routed before its first credit came: the broker SYNCs it as soon
        as a pipe to it takes one. Its socket and that SYNC."""
        self.send_control(type="instance_add", pipeline="g:p", instance="g/p@1#0", receivers=["in"])
        sock = self.instance()
        self.assertTrue(sock.poll(10000), "no SYNC")
        sync = msgpack.unpackb(sock.recv())
        self.assertEqual(sync["type"], "sync")
        self.assertIn("sync_id", sync)
        return sock, sync

    def test_a_first_credit_crossing_a_sync_waits_for_its_answer(self):
        ring = Ring()
        self.addCleanup(ring.close)
        sock, sync = self.routed_and_synced(ring)
        sent = 3 * WINDOW
        for i in range(sent):
            self.producer.send([{"seq": i}])
        #  Its first credit, crossing the SYNC, offers the ring. drover-worker
        #  takes what the ring holds before each socket message it reads, so
        #  before the SYNC: the broker must have written nothing there yet.
        self.credit(sock, ring, n=WINDOW, reset=True)
        self.assert_quiet(ring, 1.0, "batches were written to its ring before its SYNC was answered")
        #  The answer (as drover-worker's: what it took before is forgotten, its window whole).
        self.credit(sock, ring, n=WINDOW, reset=True, synced=True, sync_id=sync["sync_id"])
        seqs = []
        wait_until(lambda: len(self.feed(sock, ring, seqs)) >= sent, 20, f"all {sent} batches, a window at a time")
        self.assertEqual(sorted(seqs), list(range(sent)), "each batch once")

    def test_an_answer_to_an_older_sync_is_not_counted(self):
        ring = Ring()
        self.addCleanup(ring.close)
        sock, first = self.routed_and_synced(ring)
        #  Unanswered for a second: it goes again under a new number.
        self.assertTrue(sock.poll(10000), "no second SYNC")
        second = msgpack.unpackb(sock.recv())
        self.assertEqual(second["type"], "sync")
        self.assertGreater(second["sync_id"], first["sync_id"])
        self.producer.send([{"seq": 0}])
        self.credit(sock, ring, n=WINDOW, reset=True, synced=True, sync_id=first["sync_id"])
        self.assert_quiet(ring, 0.5, "fed on the answer to a SYNC that is not the last")
        #  The last one answered (and any sent since, as a slow machine may see).
        self.credit(sock, ring, n=WINDOW, reset=True, synced=True, sync_id=second["sync_id"])
        seqs = []
        wait_until(lambda: self.feed(sock, ring, seqs), 10, "the batch, once the last SYNC was answered")
        self.assertEqual(seqs, [0])

if __name__ == "__main__":
    unittest.main(verbosity=2)
