"""Kafka with a second client nobody here wrote (issue 48): kafkajs (pure
JavaScript, from tests/otel-js's lock file, installed by npm ci; skipped
without the npm registry) beside kcat, against librdkafka's mock cluster
(3 brokers, 6 partitions). kafkajs produces while receiver:kafka on 2
cores reads through a replace: every message arrives. exporter:kafka
writes what receiver:http took, and kafkajs' own consumer group reads every
record back, equal to what was posted."""

import json
import os
import subprocess
import threading
import unittest

from harness import free_port, wait_until
from hostile import SANITIZED
from test_kafka import Kafka
from test_otel_sdk import CLIENT, JsClients

JS = os.path.join(CLIENT, "kafka_client.js")


def kafkajs(*args, timeout=120):
    out = subprocess.run(["node", JS, *[str(a) for a in args]], capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise AssertionError(f"kafkajs {args[0]}: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


class KafkaJs(JsClients, Kafka):

    def test_what_kafkajs_produces_is_read_through_a_replace(self):
        cluster = self.cluster(3, [("in", 6)])
        session = 6000 if SANITIZED else 3000  # the mock cluster holds each rebalance for it less a second
        nodes = self.consumer(cluster, session_timeout_ms=session)
        self.start(nodes, cores=2, heartbeat_ms=1000)
        first = kafkajs("produce", cluster.bootstrap, "in", 2000, "a")
        self.assertEqual(first, {"produced": 2000})
        wait_until(lambda: len({r["body"] for r in self.filed()}) >= 2000, 60, "kafkajs' first 2,000 read")
        producer = threading.Thread(target=kafkajs, args=("produce", cluster.bootstrap, "in", 2000, "b"))
        producer.start()
        self.addCleanup(producer.join)
        nodes["in"]["config"]["session_timeout_ms"] = session + 1  # a replace while kafkajs produces
        spec = json.loads(json.dumps({"pipeline": {"cores": {"count": 2}, "nodes": nodes}})
                          .replace("{OUT}", self.engine.out_dir))
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/kafka", body=spec, timeout=120)
        self.assertEqual((status, body.get("action")), (200, "replace"), body)
        producer.join()
        want = {f"a-{n}" for n in range(2000)} | {f"b-{n}" for n in range(2000)}
        got = wait_until(lambda: (lambda b: b if want <= set(b) else None)([r["body"] for r in self.filed()]), 90,
                         "all 4,000 kafkajs messages")
        self.assertEqual(set(got), want, "none lost, nothing else")
        print(f"kafkajs: 4,000 produced, {len(got) - 4000} read twice across the replace", flush=True)

    def test_kafkajs_reads_back_what_exporter_kafka_wrote(self):
        cluster = self.cluster(3, [("out", 6)])
        port = free_port()
        self.start({"in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["k"]},
                    "k": {"type": "exporter:kafka", "config": {"brokers": cluster.brokers, "topic": "out",
                                                               "format": "ndjson", "key": "user",
                                                               "compression": "gzip"}}})
        posted = [{"i": n, "user": f"u{n % 7}", "body": f"record {n}"} for n in range(2000)]
        for at in range(0, 2000, 200):
            self.assertEqual(self.post(port, posted[at:at + 200]), 200)
        messages = kafkajs("consume", cluster.bootstrap, "out", 2000, "kafkajs-readers")
        values = sorted((json.loads(m["value"]) for m in messages), key=lambda v: v["i"])
        self.assertEqual(len(values), 2000, "every record, once")
        self.assertEqual([(v["i"], v["user"], v["body"]) for v in values], [(p["i"], p["user"], p["body"])
                                                                            for p in posted])
        #  Keyed by user: one user's records all in one partition, as kafkajs sees them.
        partitions = {}
        for m in messages:
            partitions.setdefault(json.loads(m["value"])["user"], set()).add(m["partition"])
        self.assertTrue(all(len(p) == 1 for p in partitions.values()), partitions)


if __name__ == "__main__":
    unittest.main()
