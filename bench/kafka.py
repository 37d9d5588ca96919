#!/usr/bin/env python3
"""B25/B26: Kafka (issue 39), against librdkafka's own mock cluster
(tests/helpers/kafka_mock.c) and Debian's kcat in the same run.

B25: exporter:kafka writing COUNT records (receiver:generator, each about
120 bytes as ndjson) against kcat -P producing the same lines from a file,
both idempotent with acks=all and lz4, to a topic of 4 partitions: records
a second from the start until the last is acknowledged (drover: the
exporter's records_out in /status; kcat: its whole run). Goal >= 1.0.
Reported beside it: kcat on CPU 0 alone, the one core the pipeline's
instance (librdkafka's threads with it) runs on; and the pipeline on two
cores (an instance on each, COUNT/2 records each), the machine kcat takes.

B26: receiver:kafka -> exporter:null consuming those COUNT messages against
kcat -C reading the same topic from the beginning to its end: records a
second (drover: from the first record read, the group joined, until the
last; kcat: its whole run, which joins no group). Goal >= 1.0.

Usage: bench/kafka.py [COUNT] [--smoke]   (default 2000000, best of 3)"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402
from kafka_cluster import MockCluster  # noqa: E402

RECORD = {"msg": "2026-11-26T10:00:00Z host app[42]: request served in 3ms path=/api/items/977 status=200"}


class Drover:
    def __init__(self):
        self.port = free_port()
        #  Counters come with heartbeats: every 50 ms, so the end is seen
        #  within 50 ms (of runs of about a second: COUNT is 2,000,000).
        self.engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 50\n")
                             .replace("HTTP", str(self.port))).start()
        self.admin = Admin(self.engine, self.port)
        self.admin.wait_ready(20)

    def put(self, name, nodes, cores=1):
        spec = {"pipeline": {"cores": {"count": cores}, "nodes": nodes}}
        status, body, _ = self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec, timeout=30)
        assert status == 200, body

    def counter(self, name, node, which):
        st = self.admin.http("GET", f"/api/v1/groups/default/pipelines/{name}/status")[1]
        return sum(i.get("nodes", {}).get(node, {}).get(which, 0) for i in st.get("instances") or [])

    def close(self):
        self.engine.stop()
        self.engine.cleanup()


def drover_produce(cluster, topic, count, cores=1):
    """cores: instances, each making count / cores records."""
    d = Drover()
    try:
        started = time.monotonic()
        d.put("out", {"g": {"type": "receiver:generator", "config": {"count": count // cores, "record": RECORD},
                            "to": ["k"]},
                      "k": {"type": "exporter:kafka", "config": {
                          "brokers": cluster.brokers, "topic": topic, "format": "ndjson",
                          "batch": {"max_records": 2000}}}}, cores)
        made = count // cores * cores
        wait_until(lambda: d.counter("out", "k", "records_out") >= made, 300, f"{made} written", interval=0.005)
        return made / (time.monotonic() - started)
    finally:
        d.close()


def kcat_produce(cluster, topic, path, count, pin=False):
    """pin: kcat (and so its librdkafka threads) on CPU 0 alone, as the
    pipeline's one instance and its librdkafka threads are."""
    with open(path, "rb") as lines:  # on stdin: a line a message (a file named is one message)
        started = time.monotonic()
        subprocess.run([*(["taskset", "-c", "0"] if pin else []), "kcat", "-b", cluster.bootstrap, "-P", "-t", topic, "-z", "lz4", "-X",
                        "enable.idempotence=true", "-X", "acks=all"], stdin=lines, check=True, capture_output=True,
                       timeout=300)
        return count / (time.monotonic() - started)


def drover_consume(cluster, topic, count, group):
    d = Drover()
    try:
        d.put("in", {"in": {"type": "receiver:kafka", "config": {
                         "brokers": cluster.brokers, "topics": [topic], "group_id": group, "format": "ndjson"},
                         "to": ["null"]},
                     "null": {"type": "exporter:null"}})
        try:
            wait_until(lambda: d.counter("in", "in", "records_in") > 0, 60, "the first record read", interval=0.002)
            started = time.monotonic()
            wait_until(lambda: d.counter("in", "null", "records_out") >= count, 120, f"{count} read", interval=0.005)
        except AssertionError:
            print(d.engine.log_text()[-4000:], file=sys.stderr)
            print(json.dumps(d.admin.http("GET", "/api/v1/groups/default/pipelines/in/status")[1]["instances"]),
                  file=sys.stderr)
            raise
        return count / (time.monotonic() - started)
    finally:
        d.close()


def kcat_consume(cluster, topic):
    """Records a second, and how many the topic holds: librdkafka 2.0's
    mock cluster now and then loses a few thousand of the first messages
    a producer writes to a topic, acknowledged or not, so what drover
    reads is what kcat found there."""
    started = time.monotonic()
    out = subprocess.run(["kcat", "-b", cluster.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                          "-f", "%s\n"], capture_output=True, timeout=300)
    got = out.stdout.count(b"\n")
    return got / (time.monotonic() - started), got


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 2000000
    rounds = 1 if smoke else 3
    cluster = MockCluster(1)
    work = tempfile.mkdtemp(prefix="drover-kafka-bench-")
    try:
        lines = os.path.join(work, "lines.ndjson")
        with open(lines, "w") as f:
            for n in range(count):
                f.write(json.dumps({**RECORD, "seq": n, "core": 0}, separators=(",", ":")) + "\n")
        ours = theirs = pinned = ours2 = ours_in = theirs_in = 0.0
        for r in range(rounds):
            for name in (f"d{r}", f"k{r}", f"p{r}", f"e{r}"):
                cluster.topic(name, 4)
            ours = max(ours, drover_produce(cluster, f"d{r}", count))
            ours2 = max(ours2, drover_produce(cluster, f"e{r}", count, cores=2))
            theirs = max(theirs, kcat_produce(cluster, f"k{r}", lines, count))
            pinned = max(pinned, kcat_produce(cluster, f"p{r}", lines, count, pin=True))
            rate, there = kcat_consume(cluster, f"k{r}")
            theirs_in = max(theirs_in, rate)
            ours_in = max(ours_in, drover_consume(cluster, f"k{r}", there, f"bench{r}"))
        print(f"| run ({count:,} records, ~{len(json.dumps(RECORD)) + 20} bytes each, mock cluster) | records/s |")
        print("| --- | ---: |")
        print(f"| receiver:generator -> exporter:kafka (ndjson, lz4, acks=all, idempotent) | {ours:,.0f} |")
        print(f"| kcat -P of the same lines (lz4, acks=all, idempotent) | {theirs:,.0f} |")
        print(f"| the same pipeline on 2 cores (an instance on each, half the records each) | {ours2:,.0f} |")
        print(f"| kcat -P on CPU 0 alone (taskset -c 0: one core, as the pipeline's instance has) | {pinned:,.0f} |")
        print(f"| receiver:kafka -> exporter:null (from the first record read) | {ours_in:,.0f} |")
        print(f"| kcat -C of the same topic to its end | {theirs_in:,.0f} |")
        print()
        for name, a, b in (("B25 exporter:kafka / kcat -P", ours, theirs),
                           ("B26 receiver:kafka / kcat -C", ours_in, theirs_in)):
            print(f"{name} = {a / b:.2f} (goal >= 1.0: {'met' if a / b >= 1.0 else 'missed'})")
        print(f"B25 on one core each: exporter:kafka / kcat -P on CPU 0 = {ours / pinned:.2f} (reported)")
        print(f"B25 on both cores each: exporter:kafka on 2 cores / kcat -P = {ours2 / theirs:.2f} (reported)")
    finally:
        cluster.stop()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
