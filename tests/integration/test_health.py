"""What a pipeline's status says when it is not fine (docs/operations.md, PipelineStatus), through
the real binaries: an exporter whose backend fails every attempt turns its
pipeline degraded (reason ExporterFailing, naming the node and its last
error) within policies.health.exporter_failing_secs, while /readyz stays
200, and healthy again once the backend answers; the exporter's retries,
backlog and last error show per node and in /metrics; a create that failed
leaves a pipeline every condition of which says why, not a healthy-looking
one. /metrics has the histograms and exporter figures docs/operations.md lists,
answers HEAD, and passes promtool (Debian's prometheus package)."""

import re
import socket
import subprocess
import time
import unittest

from capture import Capture
from harness import EngineTest, SLOW, curl_post, free_port, wait_until

PIPE = "/api/v1/groups/default/pipelines"
FAILING_SECS = 2


class Health(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 100\n")
        self.capture = Capture()

    def tearDown(self):
        self.capture.close()

    def status(self, name):
        status, body, _ = self.admin.http("GET", f"{PIPE}/{name}/status")
        self.assertEqual(status, 200, body)
        return body

    def condition(self, name, kind):
        return next(c for c in self.status(name)["conditions"] if c["type"] == kind)

    def put_exporting(self, name):
        spec = {"pipeline": {
            "cores": {"count": 1},
            "nodes": {
                "in": {"type": "receiver:generator", "config": {"rate": 200, "record": {"m": "x"}}, "to": ["out"]},
                "out": {"type": "exporter:http", "config": {
                    "endpoint": self.capture.url("/in"), "batch": {"max_records": 20, "max_delay_ms": 50},
                    "retry": {"initial_ms": 50, "max_ms": 200, "max_elapsed_secs": 0}}},
            },
            "policies": {"health": {"exporter_failing_secs": FAILING_SECS}},
        }}
        status, body, _ = self.admin.http("PUT", f"{PIPE}/{name}", body=spec)
        self.assertEqual(status, 200, body)

    def test_a_dead_backend_turns_the_pipeline_degraded_then_healthy_again(self):
        self.put_exporting("p")
        wait_until(lambda: len(self.capture.accepted) > 2, 10, "records delivered")
        self.assertEqual(self.status("p")["phase"], "running")
        # Ordinary batching is not lagging; nothing failed yet.
        node = self.status("p")["instances"][0]["nodes"]["out"]
        self.assertEqual((node["lagging"], node.get("last_error"), node["last_error_at"], node["recovered_at"]),
                         (False, None, None, None), node)
        events = self.admin.subscribe("pipeline.exporter_failing", "pipeline.exporter_recovered")
        self.addCleanup(events.close)
        # The backend dies: every attempt is answered 503 from now on.
        with self.capture.lock:
            self.capture.plan = [(503, {}, b"backend down")] * 100000
        died = time.monotonic()
        degraded = wait_until(lambda: (lambda c: c if c["status"] else None)(self.condition("p", "degraded")),
                              FAILING_SECS + 10 * SLOW, "the pipeline degraded")
        took = time.monotonic() - died
        self.assertGreaterEqual(took, FAILING_SECS - 0.2, "not before exporter_failing_secs")
        self.assertEqual(degraded["reason"], "ExporterFailing")
        self.assertIn("exporter out", degraded["message"])
        self.assertIn("answered 503: backend down", degraded["message"])
        self.assertEqual(self.status("p")["phase"], "degraded")
        # Kubernetes must not pull the pod for a dead backend.
        status, _, _ = self.admin.http("GET", "/readyz")
        self.assertEqual(status, 200)
        node = self.status("p")["instances"][0]["nodes"]["out"]
        self.assertGreater(node["retries"], 0)
        self.assertGreater(node["backlog_records"], 0)
        self.assertGreaterEqual(node["failing_secs"], FAILING_SECS)
        self.assertIn("503", node["last_error"])
        self.assertTrue(node["last_error_at"], node)
        # Lagging once its queue's oldest record is half exporter_failing_secs old.
        wait_until(lambda: self.status("p")["instances"][0]["nodes"]["out"]["lagging"], 10 * SLOW, "lagging")
        _, metrics, _ = self.admin.http("GET", "/metrics")
        self.assertRegex(metrics, r'drover_pipeline_degraded\{group="default",pipeline="p"\} 1')
        self.assertEqual(events.recv_multipart()[0], b"pipeline.exporter_failing")
        # It comes back: the pipeline is healthy again, nothing lost on the way.
        with self.capture.lock:
            self.capture.plan = []
        wait_until(lambda: not self.condition("p", "degraded")["status"], 10 * SLOW, "the pipeline healthy again")
        self.assertEqual(self.status("p")["phase"], "running")
        self.assertEqual(events.recv_multipart()[0], b"pipeline.exporter_recovered")
        # Recovered: the error is history (when, and when it recovered), not a last_error still shown.
        node = wait_until(lambda: (lambda n: n if n["recovered_at"] and not n["last_error"] and not n["lagging"]
                                   else None)(self.status("p")["instances"][0]["nodes"]["out"]), 10 * SLOW,
                          "last_error gone once delivering again")
        self.assertLessEqual(node["last_error_at"], node["recovered_at"])
        self.assertIn("reason=ExporterFailing node=out", self.engine.log_text())

    def put_one_refused_batch(self, name, answer, policies=None):
        """A pipeline that sends 20 records in one batch, which the backend refuses with 400 and answer."""
        with self.capture.lock:
            self.capture.plan = [(400, {}, answer)]
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": 0, "count": 20, "record": {"m": "x"}},
                   "to": ["out"]},
            "out": {"type": "exporter:http", "config": {"endpoint": self.capture.url("/in"),
                                                         "batch": {"max_records": 100, "max_delay_ms": 20}}}}}}
        if policies:
            spec["pipeline"]["policies"] = policies
        self.assertEqual(self.admin.http("PUT", f"{PIPE}/{name}", body=spec)[0], 200)

    def test_an_exporter_that_failed_once_and_then_has_nothing_to_send_is_idle_not_failing(self):
        # One batch, refused with a 400 (dropped: retrying cannot help), then no traffic at all.
        self.put_one_refused_batch("idle", b"bad request", {"health": {"exporter_failing_secs": 1}})
        node = wait_until(lambda: (lambda n: n if n and n.get("failing_secs", 0) > 1.5 else None)(
            (self.status("idle")["instances"][0]["nodes"] or {}).get("out")), 10 * SLOW, "the failure a while ago")
        self.assertEqual((node["records_dropped"], node["backlog_records"]), (20, 0))
        self.assertIn("answered 400", node["last_error"])
        # It failed once, holds nothing, and has had nothing to send since: not degraded.
        self.assertFalse(self.condition("idle", "degraded")["status"], self.condition("idle", "degraded"))
        _, metrics, _ = self.admin.http("GET", "/metrics")
        self.assertIn('drover_exporter_dropped_records_total{group="default",pipeline="idle",node="out",'
                      'generation="1",reason="GaveUp"} 20', metrics)
        self.assertEqual(self.status("idle")["phase"], "running")

    def test_a_backend_answer_that_is_not_utf8_is_kept_escaped(self):
        self.put_one_refused_batch("latin", b"bad \xff\xfe request \xc3")
        node = wait_until(lambda: (lambda n: n if n and n.get("records_dropped") == 20 else None)(
            (self.status("latin")["instances"][0]["nodes"] or {}).get("out")), 10 * SLOW, "the batch refused")
        self.assertIn("answered 400: bad \\xff\\xfe request \\xc3", node["last_error"])
        self.assertEqual(node["backlog_records"], 0)  # the fields after it still in their places

    def test_a_failed_create_says_why_in_every_condition(self):
        taken = socket.socket()
        self.addCleanup(taken.close)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        status, body, _ = self.admin.http("PUT", f"{PIPE}/x", body=spec)
        self.assertEqual(status, 409, body)
        st = self.status("x")
        self.assertEqual(st["phase"], "failed")
        self.assertEqual(st["ready_instances"], 0)
        conditions = {c["type"]: c for c in st["conditions"]}
        self.assertEqual((conditions["ready"]["status"], conditions["ready"]["reason"]), (False, "CreateFailed"))
        self.assertEqual((conditions["degraded"]["status"], conditions["degraded"]["reason"]), (True, "CreateFailed"))
        self.assertEqual(conditions["progressing"]["reason"], "RolloutFailed")
        for c in conditions.values():
            self.assertIn(f"127.0.0.1:{port}: bind: Address already in use", c["message"])
        _, metrics, _ = self.admin.http("GET", "/metrics")
        self.assertRegex(metrics, r'drover_pipeline_degraded\{group="default",pipeline="x"\} 1')
        # The port freed, the same PUT creates it.
        taken.close()
        status, body, _ = self.admin.http("PUT", f"{PIPE}/x", body=spec)
        self.assertEqual(status, 200, body)
        conditions = {c["type"]: c for c in self.status("x")["conditions"]}
        self.assertEqual((conditions["degraded"]["status"], conditions["progressing"]["reason"]), (False, "Idle"))

    def test_a_fan_out_with_drops_adds_up_in_status_and_metrics(self):
        # in -> file (delivers all) and http (its backend down, a queue of
        # 4 KiB that drops its oldest): the pipeline's records_out counts each
        # record once, the dropping node's records_dropped has its queue's
        # drops, every metric has one set of labels, every reason one casing.
        port, dead = free_port(), free_port()
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["file", "http"]},
            "file": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/fan.ndjson"}},
            "http": {"type": "exporter:http", "config": {
                "endpoint": f"http://127.0.0.1:{dead}/in", "batch": {"max_records": 50, "max_delay_ms": 20},
                "retry": {"initial_ms": 50, "max_ms": 200}, "queue": {"max_bytes": 4096, "when_full": "drop_oldest"}}}},
            "policies": {"health": {"exporter_failing_secs": 1}}}}
        self.assertEqual(self.admin.http("PUT", f"{PIPE}/fan", body=spec)[0], 200)
        for r in range(40):
            body = "".join('{"i": %d}\n' % (r * 50 + k) for k in range(50)).encode()
            self.assertEqual(curl_post(port, "/", body, "application/x-ndjson")[0], 200)
        nodes = lambda: self.status("fan")["instances"][0]["nodes"]  # noqa: E731
        wait_until(lambda: nodes()["file"]["records_out"] == 2000 and nodes()["http"]["queue"]["dropped_records"] > 0
                   and self.status("fan")["phase"] == "degraded", 10 * SLOW, "the file written, drops counted")
        status = self.status("fan")
        http = status["instances"][0]["nodes"]["http"]
        self.assertEqual((status["instances"][0]["records_in"], status["instances"][0]["records_out"]), (2000, 2000))
        self.assertEqual(http["records_dropped"], http["queue"]["dropped_records"])
        for condition in status["conditions"]:
            self.assertRegex(condition["reason"], r"^[A-Z][A-Za-z]+$", condition)
        _, text, _ = self.admin.http("GET", "/metrics")
        labels = {}
        for name, names in re.findall(r"^(\w+)\{([^}]*)\} ", text, re.M):
            keys = tuple(sorted(k for k in re.findall(r'(\w+)="', names) if k != "le"))
            family = re.sub(r"_(bucket|sum|count)$", "", name)
            labels.setdefault(family, set()).add(keys)
        mixed = {f: k for f, k in labels.items() if len(k) > 1}
        self.assertEqual(mixed, {}, "metrics whose series have different label names")
        line = lambda name, extra="": re.search(  # noqa: E731
            r'^%s\{group="default",pipeline="fan"(?:,node="http",generation="1")?%s\} (\d+)$' % (name, extra), text, re.M)
        self.assertEqual(int(line("drover_pipeline_records_out_total").group(1)), 2000)
        self.assertEqual(int(line("drover_node_records_dropped_total").group(1)), http["records_dropped"])
        self.assertEqual(int(line("drover_exporter_dropped_records_total", ',reason="QueueFull"').group(1)),
                         http["queue"]["dropped_records"])
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_metrics_time_requests_exports_and_rollouts_and_pass_promtool(self):
        port = free_port()
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:http", "config": {"endpoint": f"127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:http", "config": {"endpoint": self.capture.url("/in"),
                                                         "batch": {"max_delay_ms": 10}}}}}}
        self.assertEqual(self.admin.http("PUT", f"{PIPE}/m", body=spec)[0], 200)
        for i in range(5):
            self.assertEqual(curl_post(port, "/", b'{"i": %d}' % i, "application/json")[0], 200)

        def metric(name):
            _, text, _ = self.admin.http("GET", "/metrics")
            found = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
            return float(found.group(1)) if found else None
        labels = '{group="default",pipeline="m",node="%s",generation="1"}'
        wait_until(lambda: metric("drover_receiver_request_duration_seconds_count" + labels % "in") == 5, 10,
                   "five requests timed")
        wait_until(lambda: (metric("drover_export_duration_seconds_count" + labels % "out") or 0) >= 1, 10,
                   "a post timed")
        self.assertEqual(metric("drover_receiver_request_duration_seconds_bucket" +
                                labels.replace("}", ',le="+Inf"}') % "in"), 5)
        self.assertEqual(metric("drover_exporter_retries_total" + labels % "out"), 0)
        self.assertEqual(metric("drover_exporter_dropped_records_total" + labels.replace("}", ',reason="GaveUp"}') % "out"),
                         0)
        #  One post is timed; the other records may still be on their way.
        wait_until(lambda: metric("drover_exporter_backlog_records" + labels % "out") == 0, 10, "no backlog")
        self.assertIsNone(metric("drover_exporter_retries_total" + labels % "in"), "exporters only")
        # A file's writes are timed too.
        file_spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": 0, "count": 10}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/f.ndjson"}}}}}
        self.assertEqual(self.admin.http("PUT", f"{PIPE}/f", body=file_spec)[0], 200)
        wait_until(lambda: (metric('drover_export_duration_seconds_count{group="default",pipeline="f",node="out",'
                                   'generation="1"}') or 0) >= 1, 10, "a file write timed")
        self.assertEqual(metric('drover_rollout_duration_seconds_count{action="create"}'), 2)
        self.assertEqual(metric('drover_rollout_duration_seconds_bucket{action="create",le="7200"}'), 2)
        status, body, resp = self.admin.http("HEAD", "/metrics")
        self.assertEqual((status, body), (200, ""))
        self.assertTrue(resp.getheader("Content-Type").startswith("text/plain"))
        _, text, _ = self.admin.http("GET", "/metrics")
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)


if __name__ == "__main__":
    unittest.main()
