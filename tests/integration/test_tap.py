"""Live taps through the real binaries (docs/operations.md, seeing it live): the sampled records
are the node's output, at about 100 records/s, up to the limit; a tap
follows the pipeline through a replace; NDJSON and SSE over HTTP, and
droverctl tap over zmq; an unknown node is a 400 naming the nodes."""

import datetime
import glob
import json
import subprocess
import unittest

from harness import BIN, EngineTest, read_ndjson, wait_until
from streams import SSE, HttpStream


def seconds(stamp):
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class Tap(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 100\n")

    def put(self, tag="a", cores=1, rate=2000):
        spec = {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": rate, "count": 0, "record": {"tag": tag}},
                   "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"set": {"x": 1}, "rename": {"tag": "label"}}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out-{{core}}-{{generation}}.ndjson"}}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=spec)
        self.assertEqual(status, 200, body)

    def open(self, query, accept="application/x-ndjson", kind=HttpStream):
        s = kind(self.http_port, f"/api/v1/groups/default/pipelines/p/tap?{query}", accept=accept)
        self.addCleanup(s.close)
        return s

    def lines(self, stream, count, timeout=20):
        got = []
        while len(got) < count:
            line = stream.line(timeout)
            if line is None:
                break
            got.append(json.loads(line))
        return got

    def test_samples_are_the_nodes_output_at_about_100_a_second_up_to_the_limit(self):
        # Two cores: each instance samples up to 100/s, so the tap's own limit is what holds.
        self.put(cores=2)
        tap = self.open("node=t&limit=150")
        status, head = tap.status()
        self.assertEqual(status, 200)
        self.assertIn("Content-Type: application/x-ndjson", head)
        got = self.lines(tap, 151)
        self.assertEqual(len(got), 150, "exactly the limit, then the stream ends")
        self.assertIsNone(tap.line(2), "ended")
        self.assertTrue(tap.ended)
        for line in got:
            self.assertEqual(set(line), {"time", "generation", "core", "node", "record"})
            self.assertEqual((line["node"], line["generation"]), ("t", 1))
            self.assertIn(line["core"], (0, 1))
            record = line["record"]
            self.assertEqual({k: record[k] for k in ("label", "x")}, {"label": "a", "x": 1}, "the transform's output")
            self.assertNotIn("tag", record)
        self.assertEqual({line["core"] for line in got}, {0, 1}, "both instances sampled")
        for core in (0, 1):
            seqs = [line["record"]["seq"] for line in got if line["core"] == core]
            self.assertEqual(seqs, sorted(set(seqs)), "in the order they left the node, each once")
        # About 100 records/s: 150 records take well over a second (10 may come at once).
        span = seconds(got[-1]["time"]) - seconds(got[0]["time"])
        self.assertGreaterEqual(span, (150 - 10) / 100 * 0.9, f"150 records in {span:.2f} s")
        # Which instance's windows find tokens is a matter of timing (one may get only a few): judge
        # "a sample, not every record" on the instance with the most samples.
        seqs = max(([line["record"]["seq"] for line in got if line["core"] == core] for core in (0, 1)), key=len)
        self.assertLess(len(seqs), seqs[-1] - seqs[0], "a sample, not every record")

        # Tapping an exporter shows what it writes.
        tap = self.open("node=out&limit=20")
        sampled = [line["record"] for line in self.lines(tap, 20)]
        self.assertEqual(len(sampled), 20)
        written = wait_until(lambda: (lambda rows: rows if all(r in rows for r in sampled) else None)(
            read_ndjson(f"{self.engine.out_dir}/out-0-1.ndjson") + read_ndjson(f"{self.engine.out_dir}/out-1-1.ndjson")),
            10, "the sampled records in the files")
        self.assertTrue(all(r in written for r in sampled))

    def test_a_tap_follows_the_pipeline_through_a_replace(self):
        self.put("a", cores=2, rate=500)
        tap = self.open("limit=100000", accept="text/event-stream", kind=SSE)
        self.assertEqual(tap.status()[0], 200)
        first = tap.events(20, topic="record")
        self.assertEqual({e[2]["generation"] for e in first}, {1})
        self.assertEqual({e[2]["node"] for e in first}, {"in"}, "default: the receivers")
        self.assertEqual({e[2]["record"]["tag"] for e in first}, {"a"})
        self.put("b", cores=2, rate=500)  # a replace: generation 2 makes tag b

        def generation_2():
            e = tap.event(timeout=5)
            return e if e and e[2]["generation"] == 2 else None
        e = wait_until(generation_2, 20, "records of generation 2 on the same tap")
        self.assertEqual(e[2]["record"]["tag"], "b")
        cores = {e[2]["core"]}
        wait_until(lambda: cores.add(tap.event(timeout=5)[2]["core"]) or cores == {0, 1}, 20, "both cores sampled")

    def test_droverctl_tap_and_bad_requests(self):
        self.put()
        out = subprocess.run([f"{BIN}/droverctl", "-e", self.admin.endpoint, "tap", "default/p", "--node", "t",
                              "--limit", "5", "--for", "10"], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        self.assertEqual(len(lines), 5)
        self.assertEqual({(line["node"], line["record"]["x"]) for line in lines}, {("t", 1)})

        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/tap?node=nope")
        self.assertEqual(status, 400)
        self.assertIn('query.node: "nope" is not a node of default:p (nodes: in, t, out)', body["error"]["message"])
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/p/tap?limit=0")
        self.assertEqual(status, 400)
        self.assertIn("limit", body["error"]["message"])
        status, body, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/nope/tap")
        self.assertEqual(status, 404)
        status, body = self.admin.zmq("GET", "/api/v1/groups/default/pipelines/p/tap",
                                      query={"node": "in", "limit": "3", "timeout_secs": "5"}, timeout=10)
        self.assertEqual(status, 200, body)
        self.assertEqual(len(body["records"]), 3)


if __name__ == "__main__":
    unittest.main()
