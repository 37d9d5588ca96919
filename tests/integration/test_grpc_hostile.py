"""What one gRPC client cannot do to the others (docs/security.md,
"Connections" and "Decoding what comes from outside"): hold the body
budget from one address, or make an instance expand an HPACK bomb.
Through raw HTTP/2 from several loopback addresses."""

import socket
import unittest

from harness import SLOW, wait_until
import grpc_otlp
from grpc_otlp import WHY_NOT
from test_otlp_grpc import OtlpGrpcBase, h2_exchange, h2_frame, hpack_string


def cpu_secs(pid):
    """User plus system CPU time of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


@unittest.skipIf(WHY_NOT, WHY_NOT)
class GrpcHostile(OtlpGrpcBase):
    def grpc_call_from(self, source, message):
        """One logs Export with a whole message over a raw HTTP/2 connection
        from the source address: its grpc-status as our trailers carry it
        (the value not Huffman-coded), or None."""
        head = (b"\x83\x86\x04" + hpack_string(grpc_otlp.METHODS["logs"].encode()) + b"\x01" + hpack_string(b"x")
                + b"\x0f\x10" + hpack_string(b"application/grpc"))
        body = b"\x00" + len(message).to_bytes(4, "big") + message
        frames = h2_exchange(self.grpc_port, [h2_frame(1, 0x4, 1, head), h2_frame(0, 0x1, 1, body)], source=source)
        name = b"\x88\x9a\xca\xc8\xb2\x12\x34\xda\x8f"  # "grpc-status", Huffman-coded as nghttp2 sends it
        for type_, flags, sid, payload in frames:
            if type_ == 1 and sid == 1 and flags & 1 and name in payload:
                at = payload.index(name) + len(name)
                return int(payload[at + 1:at + 1 + (payload[at] & 0x7f)])
        return None

    def hog(self, source, connections, streams, body_bytes):
        """connections from source, each with streams calls that declare a
        4 MiB message and send body_bytes of it, never the rest."""
        head = (b"\x83\x86\x04" + hpack_string(grpc_otlp.METHODS["logs"].encode()) + b"\x01" + hpack_string(b"x")
                + b"\x0f\x10" + hpack_string(b"application/grpc"))
        socks = []
        for _ in range(connections):
            s = socket.create_connection(("127.0.0.1", self.grpc_port), timeout=5, source_address=(source, 0))
            self.addCleanup(s.close)
            frames = [b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", h2_frame(4, 0, 0, b"")]
            for sid in range(1, 2 * streams, 2):
                frames.append(h2_frame(1, 0x4, sid, head))
                frames.append(h2_frame(0, 0, sid, (b"\x00" + (4 << 20).to_bytes(4, "big") + b"x" * 16384)[:body_bytes]))
            s.sendall(b"".join(frames))
            socks.append(s)
        return socks

    def test_calls_that_send_one_byte_hold_next_to_nothing(self):
        self.put(signals=["logs"])
        message = grpc_otlp.log_request("fair", 1).SerializeToString()
        self.hog("127.0.0.1", 45, 100, 1)  # as the review found it: 45 connections x 100 calls x 1 byte
        self.assertEqual(self.grpc_call_from("127.0.0.2", message), 0, "a sender from another address refused")
        self.assertEqual(self.grpc_call_from("127.0.0.1", message), 0, "even one from the same address")

    def test_one_address_cannot_keep_others_out_of_the_body_budget(self):
        self.put(signals=["logs"])
        message = grpc_otlp.log_request("fair", 1).SerializeToString()
        self.hog("127.0.0.4", 45, 100, 16384)  # 45 x 100 x 16 KiB: past the 64 MiB budget
        wait_until(lambda: self.grpc_call_from("127.0.0.4", message) == 8, 10,
                   "the budget full: the hogging address itself refused", interval=0.2)
        statuses = []

        def admitted():
            statuses.append(self.grpc_call_from("127.0.0.3", message))
            return statuses[-1] == 0
        wait_until(admitted, 10, "a sender from another address admitted", interval=0.5)
        self.assertLessEqual(len(statuses), 4, statuses)  # refused at most a few times, as RetryInfo says to retry

    def test_an_hpack_bomb_ends_its_connection_before_it_is_expanded(self):
        self.put(signals=["logs"])
        (pid,) = self.engine.wait_instances(["default/grpc@1#0"]).values()
        #  One 4,000-byte value put in HPACK's dynamic table, then referred to
        #  one byte at a time (0xbe: index 62) through a HEADERS frame and 8
        #  CONTINUATIONs per call, 8 calls: 1.2 MB that would decode to 4.7 GB.
        literal = b"\x40" + hpack_string(b"x-bomb") + hpack_string(b"b" * 4000)
        frames = []
        for n, sid in enumerate(range(1, 17, 2)):
            first = (literal if n == 0 else b"") + b"\xbe" * (12000 if n == 0 else 16000)
            frames.append(h2_frame(1, 0, sid, first))
            frames += [h2_frame(9, 0x4 if k == 7 else 0, sid, b"\xbe" * 16000) for k in range(8)]
        before = cpu_secs(pid)
        got = h2_exchange(self.grpc_port, frames, timeout=10)
        spent = cpu_secs(pid) - before
        goaway = [p for t, _, _, p in got if t == 7]
        self.assertTrue(goaway, f"the connection ended with a GOAWAY: {[t for t, *_ in got]}")
        self.assertEqual(int.from_bytes(goaway[0][4:8], "big"), 11)  # ENHANCE_YOUR_CALM
        self.assertLess(spent, 0.2 * SLOW, f"{spent:.2f} s of CPU on a bomb")
        channel = self.channel()  # and the instance serves the next client
        grpc_otlp.export(channel, "logs", grpc_otlp.log_request("after", 1))


    def test_pings_do_not_hold_off_a_call_that_sends_nothing(self):
        import time
        self.put(signals=["logs"], connections={"request_secs": 2})
        head = (b"\x83\x86\x04" + hpack_string(grpc_otlp.METHODS["logs"].encode()) + b"\x01" + hpack_string(b"x")
                + b"\x0f\x10" + hpack_string(b"application/grpc"))
        with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=0.2) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, b"") + h2_frame(1, 0x4, 1, head)
                      + h2_frame(0, 0, 1, b"\x00\x00\x00\x10\x00"))  # a message of 4 KiB declared, none sent
            started, data, ended = time.monotonic(), b"", None
            while ended is None and time.monotonic() - started < 10 * SLOW:
                try:
                    s.sendall(h2_frame(6, 0, 0, b"pingping"))  # a PING every 0.2 s: no message bytes
                    chunk = s.recv(65536)
                    data += chunk
                    if not chunk or b"\x00\x00\x04\x03\x00\x00\x00\x00\x01\x00\x00\x00\x08" in data:
                        ended = time.monotonic() - started  # closed, or RST_STREAM(CANCEL) on stream 1
                except socket.timeout:
                    pass
                except OSError:
                    ended = time.monotonic() - started
        self.assertIsNotNone(ended, "the call was still open after 10 s of PINGs")
        self.assertGreater(ended, 1.5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
