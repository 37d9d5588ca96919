"""receiver:prometheus (docs/operations.md, "Scraping Prometheus targets";
issue 51) through the real binaries: Debian's prometheus-node-exporter
(a target nobody here wrote) scraped — its counters arrive as cumulative
monotonic sums keeping their Prometheus names, with job and instance as
the resource and the target's labels on every point; droverd's own
/metrics scraped too, its histograms arriving as histograms; a refused
target gives up 0; a target that accepts and never answers times out
without holding the other targets' scrapes; a scrape over sample_limit
fails whole; everything then goes on to Debian's prometheus through
exporter:prometheus_remote_write, where PromQL finds node-exporter's
series under their own names."""

import socket
import subprocess
import unittest

from harness import EngineTest, free_port, read_ndjson, wait_until
from prometheus import Prometheus


class Scrape(EngineTest):
    def setUp(self):
        self.start_admin_engine()
        self.exporter_port = free_port()
        self.exporter = subprocess.Popen(
            ["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{self.exporter_port}",
             "--collector.disable-defaults", "--collector.cpu", "--collector.meminfo", "--collector.loadavg"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (self.exporter.kill(), self.exporter.wait()))
        wait_until(lambda: self.reachable(self.exporter_port), 20, "node-exporter listening")

    @staticmethod
    def reachable(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    def put(self, config, out=None):
        nodes = {"s": {"type": "receiver:prometheus", "config": config, "to": ["out"]},
                 "out": out or {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out.ndjson"}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/scrape",
                                          body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
        return status, body

    def rows(self):
        return read_ndjson(f"{self.engine.out_dir}/out.ndjson")

    def test_node_exporter_droverd_and_a_refused_target(self):
        silent = socket.socket()  # accepts (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        self.addCleanup(silent.close)
        status, body = self.put({"interval_secs": 1, "timeout_secs": 1, "targets": [
            {"url": f"http://127.0.0.1:{self.exporter_port}/metrics", "job": "node", "labels": {"env": "test"}},
            {"url": f"http://127.0.0.1:{self.http_port}/metrics", "job": "droverd"},
            {"url": f"http://127.0.0.1:{free_port()}/metrics", "job": "gone"},
            {"url": f"http://127.0.0.1:{silent.getsockname()[1]}/metrics", "job": "silent"}]})
        self.assertEqual(status, 200, body)

        def ups():
            found = {}
            for r in self.rows():
                if r["name"] == "up":
                    found.setdefault(r["resource"]["service.name"], []).append(r["value"])
            return found if {"node", "droverd", "gone", "silent"} <= set(found) and len(found["node"]) >= 2 else None
        up = wait_until(ups, 30, "up of every target, node twice")
        self.assertEqual((up["node"][0], up["droverd"][0], up["gone"][0], up["silent"][0]), (1, 1, 0, 0))
        rows = self.rows()
        cpu = next(r for r in rows if r["name"] == "node_cpu_seconds_total")
        self.assertEqual((cpu["type"], cpu["is_monotonic"], cpu["aggregation_temporality"]), ("sum", True, 2))
        self.assertEqual(cpu["resource"], {"service.name": "node",
                                           "service.instance.id": f"127.0.0.1:{self.exporter_port}"})
        self.assertEqual((cpu["attributes"]["env"], set(cpu["attributes"]) >= {"cpu", "mode"}), ("test", True))
        self.assertEqual(cpu["description"], "Seconds the CPUs spent in each mode.")
        self.assertEqual(next(r for r in rows if r["name"] == "node_load1")["type"], "gauge")
        gc = next(r for r in rows if r["name"] == "go_gc_duration_seconds")
        self.assertEqual(gc["type"], "summary")
        self.assertTrue(gc["quantile_values"])
        histogram = next(r for r in rows if r["name"] == "drover_rollout_duration_seconds")
        self.assertEqual(histogram["type"], "histogram")
        self.assertEqual(len(histogram["bucket_counts"]), len(histogram["explicit_bounds"]) + 1)
        self.assertEqual(sum(histogram["bucket_counts"]), histogram["count"])
        self.assertFalse([r for r in rows if r["resource"]["service.name"] in ("gone", "silent")
                          and r["name"] not in ("up", "scrape_duration_seconds")], "a failed scrape says only up 0")
        silent_secs = [r["value"] for r in rows if r["name"] == "scrape_duration_seconds"
                       and r["resource"]["service.name"] == "silent"]
        self.assertGreaterEqual(silent_secs[0], 0.9, "timed out after timeout_secs")

    def test_a_scrape_over_sample_limit_fails_whole(self):
        status, body = self.put({"interval_secs": 1, "sample_limit": 5, "targets": [
            {"url": f"http://127.0.0.1:{self.exporter_port}/metrics", "job": "node"}]})
        self.assertEqual(status, 200, body)
        wait_until(lambda: [r for r in self.rows() if r["name"] == "up"], 20, "the scrape")
        self.assertEqual({r["name"] for r in self.rows()}, {"up", "scrape_duration_seconds"})
        self.assertEqual(next(r for r in self.rows() if r["name"] == "up")["value"], 0)
        self.engine.wait_log(r"more than 5 samples \(sample_limit\)", 10)

    def test_a_wrong_config_is_refused_naming_each_mistake(self):
        status, body = self.put({"interval_secs": 5, "timeout_secs": 10, "targets": [
            {"url": "ftp://x/metrics", "labels": {"0bad": "x"}, "port": 1}]})
        self.assertEqual(status, 422, body)
        text = str(body)
        for what in ("url: must be", "labels.0bad", 'unknown key "port"', "timeout_secs"):
            self.assertIn(what, text)
        self.assertEqual(self.put({"targets": []})[0], 422)

    def test_scraped_series_reach_prometheus_under_their_own_names(self):
        prometheus = Prometheus()
        self.addCleanup(prometheus.close)
        status, body = self.put({"interval_secs": 1, "targets": [
            {"url": f"http://127.0.0.1:{self.exporter_port}/metrics", "job": "node"}]},
            out={"type": "exporter:prometheus_remote_write",
                 "config": {"endpoint": prometheus.url("/api/v1/write"), "batch": {"max_delay_ms": 50}}})
        self.assertEqual(status, 200, body)
        got = wait_until(lambda: prometheus.query('node_cpu_seconds_total{mode="idle"}'), 30,
                         "node-exporter's counter in prometheus")
        self.assertEqual((got[0][0]["job"], got[0][0]["instance"]), ("node", f"127.0.0.1:{self.exporter_port}"))
        wait_until(lambda: prometheus.query('up{job="node"}') and prometheus.query('up{job="node"}')[0][1] == 1, 20,
                   "up 1")


if __name__ == "__main__":
    unittest.main()
