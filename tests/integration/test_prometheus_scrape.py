"""receiver:prometheus (docs/operations.md, "Scraping Prometheus targets";
issue 51) through the real binaries: Debian's prometheus-node-exporter
(a target nobody here wrote) scraped — its counters arrive as cumulative
monotonic sums keeping their Prometheus names, with job and instance as
the resource and the target's labels on every point; droverd's own
/metrics scraped too, its histograms arriving as histograms; a refused
target gives up 0; a target that accepts and never answers times out
without holding the other targets' scrapes; a 64 MiB answer and a slow
drip fail their scrapes without the instance holding them; a scrape over
sample_limit fails whole; everything then goes on to Debian's prometheus through
exporter:prometheus_remote_write, where PromQL finds node-exporter's
series under their own names; with kubernetes_pods, the node's pods
annotated prometheus.io/scrape are found through the Kubernetes API and
scraped as they come and go."""

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

    def test_a_huge_body_and_a_slow_drip_fail_their_scrapes_and_hold_no_memory(self):
        """A target answering 64 MiB (max_body_bytes 1 MiB) and one dripping a
        byte every 50 ms (timeout_secs 1): each scrape fails (up 0) without
        the instance holding the body, and the good target goes on."""
        import http.server
        import threading
        import time as _time

        class Huge(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(64 << 20))
                self.end_headers()
                line = b"x 1\n" * 16384
                try:
                    for _ in range((64 << 20) // len(line)):
                        self.wfile.write(line)
                except OSError:
                    pass  # the scraper stopped reading: what it should do

            def log_message(self, *args):
                pass

        class Drip(Huge):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                try:
                    for _ in range(200):
                        self.wfile.write(b"#")
                        self.wfile.flush()
                        _time.sleep(0.05)  # the drip itself: what the test serves, not a synchronisation
                except OSError:
                    pass
        servers = []
        for handler in (Huge, Drip):
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
            self.addCleanup(server.server_close)
            self.addCleanup(server.shutdown)
            servers.append(server.server_address[1])
        status, body = self.put({"interval_secs": 2, "timeout_secs": 1, "max_body_bytes": 1048576, "targets": [
            {"url": f"http://127.0.0.1:{servers[0]}/metrics", "job": "huge"},
            {"url": f"http://127.0.0.1:{servers[1]}/metrics", "job": "drip"},
            {"url": f"http://127.0.0.1:{self.exporter_port}/metrics", "job": "node"}]})
        self.assertEqual(status, 200, body)

        def ups():
            found = {}
            for r in self.rows():
                if r["name"] == "up":
                    found.setdefault(r["resource"]["service.name"], []).append(r["value"])
            return found if all(len(found.get(j, [])) >= 2 for j in ("huge", "drip", "node")) else None
        up = wait_until(ups, 30, "two scrapes of each target")
        self.assertEqual((set(up["huge"]), set(up["drip"]), set(up["node"])), ({0}, {0}, {1}))
        self.engine.wait_log(r"the body is over max_body_bytes", 10)
        from hostile import SANITIZED
        if not SANITIZED:  # ASan keeps what is freed in its quarantine: RSS says nothing there
            (pid,) = self.engine.instances().values()
            from harness import proc_status
            rss_kb = int((proc_status(pid, "VmRSS") or "0 kB").split()[0])
            self.assertLess(rss_kb, 48 * 1024, "64 MiB answers are not held")

    def test_a_wrong_config_is_refused_naming_each_mistake(self):
        status, body = self.put({"interval_secs": 5, "timeout_secs": 10, "targets": [
            {"url": "ftp://x/metrics", "labels": {"0bad": "x"}, "port": 1}]})
        self.assertEqual(status, 422, body)
        text = str(body)
        for what in ("url: must be", "labels.0bad", 'unknown key "port"', "timeout_secs"):
            self.assertIn(what, text)
        self.assertEqual(self.put({"targets": []})[0], 422)
        status, body = self.put({"kubernetes_pods": {"api": {"server": "ftp://x"}, "color": 1}})
        self.assertEqual(status, 422, body)
        self.assertIn("kubernetes_pods.api.server: must be in_cluster", str(body))
        self.assertIn("kubernetes_pods.color", str(body))

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


class PodDiscovery(EngineTest):
    """kubernetes_pods: the node's pods annotated prometheus.io/scrape, found
    through the Kubernetes API (the fake API server of kube_api.py), each
    serving its own metrics on loopback."""

    def serve(self, text):
        import http.server
        import threading
        body = text.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200 if self.path == "/custom" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server.server_address[1]

    def test_annotated_pods_of_the_node_are_scraped_as_they_come_and_go(self):
        from kube_api import KubeApi, pod
        api = KubeApi(token=None)
        self.addCleanup(api.close)
        port_a, port_b = self.serve("a_total 1\n"), self.serve("b_total 2\n")
        notes = lambda port: {"prometheus.io/scrape": "true", "prometheus.io/port": str(port),  # noqa: E731
                              "prometheus.io/path": "/custom"}
        api.put("pods", pod("a-1", "n1", "shop", ip="127.0.0.1", annotations=notes(port_a)))
        api.put("pods", pod("quiet", "n1", "shop", ip="127.0.0.1"))  # not annotated
        api.put("pods", pod("elsewhere", "n2", "shop", ip="127.0.0.1", annotations=notes(port_b)))
        self.start_admin_engine()
        nodes = {"s": {"type": "receiver:prometheus", "to": ["out"], "config": {
                     "interval_secs": 1, "kubernetes_pods": {"api": {"server": api.url()}, "node": "n1",
                                                             "annotations": True}}},
                 "out": {"type": "exporter:file", "config": {"path": f"{self.engine.out_dir}/out.ndjson"}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/pods",
                                          body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
        self.assertEqual(status, 200, body)
        rows = lambda: read_ndjson(f"{self.engine.out_dir}/out.ndjson")  # noqa: E731
        a = wait_until(lambda: [r for r in rows() if r["name"] == "a_total"], 30, "pod a-1 scraped")[0]
        self.assertEqual(a["resource"], {"service.name": "kubernetes-pods", "service.instance.id": f"127.0.0.1:{port_a}"})
        self.assertEqual(a["attributes"], {"namespace": "shop", "pod": "a-1"})
        #  A pod annotated later on this node: scraped; the first one deleted: no longer.
        api.put("pods", pod("b-1", "n1", "shop", ip="127.0.0.1", annotations=notes(port_b)))
        wait_until(lambda: [r for r in rows() if r["name"] == "b_total"], 30, "pod b-1 scraped")
        api.delete("pods", "shop", "a-1")
        self.engine.wait_log(r"scrapes 1 pods found through the Kubernetes API", 30, count=2)  # a-1 alone, then b-1
        before = len([r for r in rows() if r["name"] == "a_total"])
        wait_until(lambda: len([r for r in rows() if r["name"] == "b_total"]) >= 3, 30, "b-1 scraped on")
        self.assertEqual(len([r for r in rows() if r["name"] == "a_total"]), before, "a-1 no longer scraped")
        self.assertFalse([r for r in rows() if r["attributes"].get("pod") in ("quiet", "elsewhere")])
        self.assertTrue(any("fieldSelector=spec.nodeName%3Dn1" in p for _, p, _ in api.requests))


if __name__ == "__main__":
    unittest.main()
