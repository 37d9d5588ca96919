"""Kafka for the tests and benchmarks: librdkafka's own mock cluster (the
real protocol on loopback) started from tests/helpers/kafka_mock.c, and
Debian's kcat as a client nobody here wrote, to put messages in and read
them back."""

import os
import subprocess
import tempfile
import threading

from harness import BIN, wait_until

MOCK = os.path.abspath(os.path.join(BIN, "..", "tests", "kafka_mock"))


class MockCluster:
    """kafka_mock BROKERS TOPIC:PARTITIONS...; ends with the test."""

    def __init__(self, brokers=1, topics=()):
        #  Its log to a file, not a pipe nobody reads while it runs: a full
        #  pipe would stop the brokers mid-test.
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([MOCK, str(brokers)] + [f"{t}:{p}" for t, p in topics],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "bootstrap":
            self.stop()
            self.log.seek(0)
            raise AssertionError(f"kafka_mock did not start: {line} {self.log.read()}")
        self.bootstrap = line[1]
        self.brokers = self.bootstrap.split(",")
        self._lock = threading.Lock()

    def command(self, text):
        with self._lock:
            self.proc.stdin.write(text + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline().strip()
        if answer != "ok":
            raise AssertionError(f"kafka_mock {text}: {answer}")

    def down(self):
        self.command("down -1")

    def up(self):
        self.command("up -1")

    def topic(self, name, partitions):
        self.command(f"topic {name} {partitions}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.log):
            f.close()


def produce(bootstrap, topic, lines, key=None, partition=None):
    """kcat -P: each line a message (its key before the first tab with
    key=True), into one partition or spread by kcat's partitioner."""
    args = ["kcat", "-b", bootstrap, "-P", "-t", topic, "-X", "enable.idempotence=true"]
    if key:
        args += ["-K", "\t"]
    if partition is not None:
        args += ["-p", str(partition)]
    data = "".join(line + "\n" for line in lines).encode()
    subprocess.run(args, input=data, check=True, capture_output=True, timeout=60)


def consume(bootstrap, topic, timeout=60):
    """kcat -C from the beginning to each partition's end: [(partition,
    offset, key bytes or None, value bytes)]."""
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                          "-f", "%p %o %K %S\n%k%s"], capture_output=True, timeout=timeout)
    if out.returncode != 0:
        raise AssertionError(f"kcat -C {topic}: {out.stderr.decode(errors='replace')}")
    data, messages, at = out.stdout, [], 0
    while at < len(data):
        nl = data.index(b"\n", at)
        partition, offset, key_len, size = (int(x) for x in data[at:nl].split())
        at = nl + 1
        key = None
        if key_len >= 0:
            key, at = data[at:at + key_len], at + key_len
        messages.append((partition, offset, key, data[at:at + size]))
        at += size
    return messages


def wait_messages(bootstrap, topic, count, timeout=30):
    """Polls kcat until the topic holds at least count messages."""
    return wait_until(lambda: (lambda m: m if len(m) >= count else None)(consume(bootstrap, topic)), timeout,
                      f"{count} messages on {topic}", interval=0.3)
