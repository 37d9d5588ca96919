#!/usr/bin/env python3
"""B29: exactness under change (issue 48). For receiver:file (four files
written at WRITE_RATE lines/s, rotated by rename every 1,500 lines) and for
receiver:kafka (librdkafka's mock cluster, 3 brokers, 6 partitions, kcat
producing; assignment: group, then node), all on 2 cores into exporter:file, each kind of operation is
done ROUNDS times while lines flow: a replace, a resize (2 -> 1 -> 2), a
canary promoted by hand, a replace then a rollback, an upgrade of drover
itself, a SIGKILL of the whole tree (droverd restarts it from its state
file). Then writing stops, every line is awaited, and the lines read twice
are counted: per 100,000 lines. Goal: 0 for files and for Kafka with
assignment: node on every change but a kill, which may repeat what was
unsettled (with assignment: group the coordinator decides). Nothing may be lost (the
run fails if a line is).

Usage: bench/exactness.py [ROUNDS] [--smoke]   (default 3; --smoke: a replace of files, briefly)"""

import collections
import datetime
import glob
import json
import os
import shutil
import signal
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import BIN, Admin, Engine, engine_yaml, free_port, read_ndjson, wait_until  # noqa: E402
from kafka_cluster import MockCluster, produce  # noqa: E402
from test_upgrade import NEXT, install  # noqa: E402

OPS = ("replace", "resize", "canary", "rollback", "upgrade", "kill -9")
PATH = "/api/v1/groups/default/pipelines/x"


class Files:
    """Four files, each written 4 lines every 20 ms, rotated by rename every 1,500."""

    name = "files"

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="drv-b29-")
        self.written, self.stop, self.thread = [], threading.Event(), None

    def node(self):
        return {"type": "receiver:file", "config": {"include": [f"{self.dir}/*.log"], "start_at": "beginning"}}

    def run(self):
        handles = [open(f"{self.dir}/f{p}.log", "a") for p in range(4)]
        counts, n = [0] * 4, 0
        while not self.stop.is_set():
            for p in range(4):
                lines = [f"f{p}-{n + k}" for k in range(4)]
                handles[p].write("".join(line + "\n" for line in lines))
                handles[p].flush()
                self.written.extend(lines)
                counts[p] += 4
                if counts[p] >= 1500:
                    os.rename(f"{self.dir}/f{p}.log", f"{self.dir}/f{p}.log.{datetime.datetime.now():%H%M%S%f}")
                    handles[p].close()
                    handles[p], counts[p] = open(f"{self.dir}/f{p}.log", "a"), 0
            n += 4
            self.stop.wait(0.02)
        for h in handles:
            h.close()

    def start(self):
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def finish(self):
        self.stop.set()
        self.thread.join()
        shutil.rmtree(self.dir, True)


class Kafka(Files):
    """kcat -P, 50 messages into each of 6 partitions a round, about 4 rounds a second."""

    name = "kafka"

    def __init__(self):
        super().__init__()
        self.cluster = MockCluster(3, [("in", 6)])

    def node(self):
        return {"type": "receiver:kafka", "config": {"brokers": self.cluster.brokers, "topics": ["in"],
                                                     "group_id": "b29", "format": "ndjson"}}

    def run(self):
        n = 0
        while not self.stop.is_set():
            for p in range(6):
                lines = [f"k{p}-{n + k}" for k in range(50)]
                produce(self.cluster.bootstrap, "in", [json.dumps({"body": line}) for line in lines], partition=p)
                self.written.extend(lines)
            n += 50
            self.stop.wait(0.25)

    def finish(self):
        super().finish()
        self.cluster.stop()


class KafkaNode(Kafka):
    """The same, read with assignment: node (the engine's instances divide the partitions)."""

    name = "kafka, assignment: node"

    def node(self):
        node = super().node()
        node["config"]["assignment"] = "node"
        return node


def scenario(source, op, rounds, between=1200):
    """Lines written, lines read twice, for rounds of op on source (between:
    lines written between two operations)."""
    install_dir = tempfile.mkdtemp(prefix="drv-b29-install-")
    install(BIN, install_dir)
    droverd = os.path.join(install_dir, "droverd")
    port = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 1000\n  state_file: {RUN}/state.json\n")
                    .replace("HTTP", str(port)))
    engine.start(droverd=droverd)
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)

        def spec(stamp, cores=2, canary=None):
            rollout = {"step_timeout_secs": 60, "drain_timeout_secs": 30}
            if canary:
                rollout["canary"] = canary
            return {"pipeline": {"cores": {"count": cores}, "policies": {"rollout": rollout}, "nodes": {
                "in": dict(source.node(), to=["t"]),
                "t": {"type": "processor:transform", "config": {"set": {"stamp": stamp}}, "to": ["out"]},
                "out": {"type": "exporter:file",
                        "config": {"path": f"{engine.out_dir}/out-{{core}}-{{generation}}.ndjson"}}}}}

        def put(body, query=""):
            status, reply, _ = admin.http("PUT", PATH + query, body=body, timeout=120)
            assert status in (200, 202), reply
            return reply

        def bodies():
            rows = []
            for path in glob.glob(f"{engine.out_dir}/out-*.ndjson"):
                rows += read_ndjson(path, killed=True)
            return [r["body"] for r in rows]

        def flow():  # about 1.5 s of lines between two operations
            mark = len(source.written) + between
            wait_until(lambda: len(source.written) >= mark, 60, "lines to flow")

        put(spec(0))
        source.start()
        wait_until(lambda: len(bodies()) >= min(500, between), 60, "reading under way")
        stamp = 0
        for r in range(rounds):
            flow()
            stamp += 1
            if op == "replace":
                put(spec(stamp))
            elif op == "resize":
                put(spec(0, cores=1))
                flow()
                put(spec(0, cores=2))
            elif op == "canary":
                reply = put(spec(stamp, canary={"cores": 1, "hold_secs": 600, "auto_promote": False}), "?wait=false")
                rid = reply["rollout_id"]
                state = lambda: admin.http("GET", f"{PATH}/rollouts/{rid}")[1]["state"]  # noqa: E731
                wait_until(lambda: state() == "paused", 60, "the canary's hold")
                flow()
                admin.http("POST", f"{PATH}/rollouts/{rid}/promote", body={})
                wait_until(lambda: state() in ("succeeded", "failed"), 60, "the promotion")
            elif op == "rollback":
                put(spec(stamp))
                flow()
                status, reply, _ = admin.http("POST", PATH + "/rollback", body={}, timeout=120)
                assert status == 200, reply
            elif op == "upgrade":
                install(NEXT if r % 2 == 0 else BIN, install_dir)
                status, reply, _ = admin.http("POST", "/api/v1/engine/upgrade", body={})
                assert status == 202, reply
                admin.wait_upgraded()
            elif op == "kill -9":
                engine.signal(signal.SIGKILL)
                engine.wait_exit(10)
                engine.log.close()
                engine.start(droverd=droverd)
                admin.wait_ready(30)
        flow()
        source.stop.set()
        source.thread.join()
        want = set(source.written)
        try:
            got = wait_until(lambda: (lambda b: b if want <= set(b) else None)(bodies()), 120,
                             f"all {len(want)} lines")
        except AssertionError:
            missing = sorted(want - set(bodies()))
            raise AssertionError(f"{source.name} {op}: {len(missing)} lines never came, {missing[:5]}…; "
                                 f"log: {engine.log_text()[-3000:]}")
        counts = collections.Counter(got)
        lost = len(want - set(counts))
        assert lost == 0, f"{source.name} {op}: {lost} lines lost"
        return len(want), len(got) - len(want)
    finally:
        engine.cleanup()
        source.finish()
        shutil.rmtree(install_dir, True)


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = int(args[0]) if args else 3
    sources = (Files,) if smoke else (Files, Kafka, KafkaNode)
    ops = ("replace",) if smoke else OPS
    results = {}
    for kind in sources:
        for op in ops:
            results[(kind.name, op)] = scenario(kind(), op, rounds, 200 if smoke else 1200)
    print(f"| B29 operation, {rounds} rounds each | " + " | ".join(f"{k.name}: lines, twice, per 100,000"
                                                               for k in sources) + " | goal |")
    print("| --- | " + " | ".join("---" for _ in sources) + " | --- |")
    for op in ops:
        cells = []
        for kind in sources:
            lines, twice = results[(kind.name, op)]
            cells.append(f"{lines:,}, {twice:,}, {100000 * twice / lines:.0f}")
        goal = "0 (not group)" if op != "kill -9" else "the unsettled window"
        print(f"| {op} | " + " | ".join(cells) + f" | {goal} |")
    for kind in sources:
        for op in ops:
            if kind is not Kafka and op != "kill -9":
                twice = results[(kind.name, op)][1]
                print(f"B29 {kind.name} {op}: {twice} read twice (goal 0: {'met' if twice == 0 else 'missed'})")


if __name__ == "__main__":
    main()
