"""Readers for droverd's streaming routes over a plain socket: Server-Sent
Events (GET /api/v1/events, taps) and NDJSON taps. Every read has a deadline."""

import collections
import json
import socket
import threading
import time

from harness import SLOW  # sanitized runs stretch every deadline


class HttpStream:
    """GET path on 127.0.0.1:port; the head is read, then the body's lines
    (chunked transfer decoded) as they come."""

    def __init__(self, port, path, accept="text/event-stream", rcvbuf=None, headers=None):
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\n{extra}\r\n".encode())
        self.raw = b""      # bytes received, not yet decoded
        self.partial = b""  # the body's last line, not complete yet
        self.lines = collections.deque()  # complete body lines, not yet consumed
        self.head = None
        self.ended = False

    def _fill(self, deadline):
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        if not data:
            self.ended = True
            return False
        self.raw += data
        if self.head is None and b"\r\n\r\n" in self.raw:
            self.head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        if self.head is not None:
            while True:  # chunked: size line, data, CRLF
                if b"\r\n" not in self.raw:
                    break
                size_line, rest = self.raw.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    self.ended = True
                    self.raw = b""
                    break
                if len(rest) < size + 2:
                    break
                pieces = (self.partial + rest[:size]).split(b"\n")
                self.partial = pieces.pop()
                self.lines.extend(pieces)
                self.raw = rest[size + 2:]
        return True

    def status(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while self.head is None and time.monotonic() < deadline and not self.ended:
            self._fill(deadline)
        if self.head is None:
            raise AssertionError("no response head")
        return int(self.head.split(b" ")[1]), self.head.decode(errors="replace")

    def line(self, timeout):
        """The next body line (without newline), or None at the deadline or end."""
        deadline = time.monotonic() + timeout * SLOW
        while not self.lines:
            if self.ended or time.monotonic() >= deadline:
                return None
            self._fill(deadline)
        return self.lines.popleft().decode()

    def close(self):
        self.sock.close()


class SSE(HttpStream):
    def event(self, timeout=10.0):
        """The next event as (id, event, data as JSON), skipping comments; None at the deadline."""
        deadline = time.monotonic() + timeout * SLOW
        fields = {}
        while True:
            line = self.line(max(0.0, deadline - time.monotonic()) / SLOW)
            if line is None:
                return None
            if line == "":
                if fields:
                    return fields.get("id"), fields.get("event", "message"), json.loads(fields.get("data", "null"))
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value

    def events(self, count, timeout=10.0, topic=None):
        deadline = time.monotonic() + timeout * SLOW
        got = []
        while len(got) < count:
            e = self.event(max(0.0, deadline - time.monotonic()) / SLOW)
            if e is None:
                raise AssertionError(f"{len(got)} of {count} events before the deadline: {got[-3:]}")
            if topic is None or e[1].startswith(topic):
                got.append(e)
        return got


class Collector(threading.Thread):
    """Reads count events of an SSE stream in the background (a client that
    keeps up while the test is busy making them)."""

    def __init__(self, stream, count, timeout):
        super().__init__(daemon=True)
        self.stream, self.count, self.timeout = stream, count, timeout
        self.got, self.error = [], None
        self.start()

    def run(self):
        try:
            self.got = self.stream.events(self.count, self.timeout)
        except AssertionError as e:
            self.error = e

    def result(self):
        self.join(self.timeout * SLOW + 5)
        if self.error:
            raise self.error
        return self.got
