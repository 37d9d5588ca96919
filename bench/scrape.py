#!/usr/bin/env python3
"""B33: the CPU a scrape of Debian's prometheus-node-exporter costs
(issue 51; report). drover: receiver:prometheus -> exporter:null on one
core, scraping every second; its instance's CPU time (user + system, from
/proc) over SECONDS, per scrape. Prometheus (Debian's, in the same run):
scraping the same target every second, its process's CPU time over the
same span, per scrape — its own scrape with the append to its TSDB, which
is what it does with what it scrapes, as drover hands records on.

Usage: bench/scrape.py [SECONDS] [--smoke]   (default 30)"""

import os
import subprocess
import sys
import time

os.environ.setdefault("DROVER_CHECK_STATUS_CACHE", "0")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402
from prometheus import Prometheus  # noqa: E402


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def series(port):
    """The samples the target serves now (0 while it is not up yet)."""
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            return sum(1 for line in r.read().decode().splitlines() if line and not line.startswith("#"))
    except OSError:
        return 0


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else (1.0 if smoke else 30.0)
    exporter_port = free_port()
    exporter = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{exporter_port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: series(exporter_port) > 0, 20, "node-exporter serving")
        count = series(exporter_port)
        port = free_port()
        engine = Engine(engine_yaml().replace("HTTP", str(port))).start()
        try:
            admin = Admin(engine, port)
            admin.wait_ready(20)
            nodes = {"s": {"type": "receiver:prometheus", "to": ["out"], "config": {
                "interval_secs": 1, "targets": [{"url": f"http://127.0.0.1:{exporter_port}/metrics", "job": "node"}]}},
                     "out": {"type": "exporter:null"}}
            status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/scrape",
                                         body={"pipeline": {"cores": {"count": 1}, "nodes": nodes}}, timeout=30)
            assert status == 200, body
            (pid,) = engine.instances().values()
            time.sleep(1)  # past the start's first scrape: the window holds whole intervals
            before = cpu(pid)
            time.sleep(seconds)  # the measurement window itself, not a synchronisation
            drover = (cpu(pid) - before) / seconds
        finally:
            engine.stop()
            engine.cleanup()
        if smoke:  # it runs: Prometheus' own figure is not what a smoke run is for
            print(f"B33 CPU per scrape: drover {drover * 1000:.1f} ms ({count:,} samples; smoke run)")
            return
        prometheus = Prometheus(scrape_configs=[{"job_name": "node", "scrape_interval": "1s",
                                                 "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}])
        try:
            wait_until(lambda: prometheus.query("up"), 30, "prometheus scraping")
            before = cpu(prometheus.proc.pid)
            time.sleep(seconds)
            theirs = (cpu(prometheus.proc.pid) - before) / seconds
        finally:
            prometheus.close()
    finally:
        exporter.kill()
        exporter.wait()
    print(f"| a scrape of node-exporter ({count:,} samples), every second for {seconds:.0f} s | CPU ms per scrape |")
    print("| --- | ---: |")
    print(f"| drover: receiver:prometheus -> exporter:null (the instance) | {drover * 1000:.1f} |")
    print(f"| Prometheus 2.42: its scrape and TSDB append (the process) | {theirs * 1000:.1f} |")
    print()
    print(f"B33 CPU per scrape: drover {drover * 1000:.1f} ms, Prometheus {theirs * 1000:.1f} ms (report)")


if __name__ == "__main__":
    main()
