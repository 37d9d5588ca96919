#!/usr/bin/env python3
"""B32: Prometheus remote write through drover (issue 51). drover-bench
rw-post posts the same snappy WriteRequest (500 series of one sample, as a
scrape of a node makes them) as fast as it is answered to
receiver:prometheus_remote_write -> exporter:prometheus_remote_write on one
core, which writes it to a second pipeline (receiver -> exporter:null) on
the other core; drover's figure is the first pipeline's exporter's
records_out per second between two samples of its status. The baseline is
the same request snappy-uncompressed, unpacked, packed and compressed
again with protobuf-c and libsnappy in a loop (drover-bench rw-loop), on
this machine in the same run: what the wire work alone costs. Goal >= 0.5.

Usage: bench/remote_write.py [SECONDS] [--smoke]   (default 8)"""

import os
import re
import subprocess
import sys
import time

os.environ.setdefault("DROVER_CHECK_STATUS_CACHE", "0")  # measured as users get it
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import BIN, Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402

SERIES = 500


def exported(admin):
    status, body, _ = admin.http("GET", "/api/v1/groups/default/pipelines/through/status")
    nodes = ((body.get("instances") or [{}])[0].get("nodes") or {}) if status == 200 else {}
    return nodes.get("out", {}).get("records_out", 0)


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else (1.0 if smoke else 8.0)
    baseline = subprocess.run([f"{BIN}/drover-bench", "rw-loop", str(seconds / 2), str(SERIES), "1"],
                              capture_output=True, text=True, check=True).stdout
    limit = float(re.search(r"samples_per_sec=(\d+)", baseline).group(1))
    port = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 200\n").replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)
        into, sink = free_port(), free_port()
        for name, nodes in (
                ("sink", {"in": {"type": "receiver:prometheus_remote_write", "config": {"endpoint": f"127.0.0.1:{sink}"},
                                 "to": ["out"]}, "out": {"type": "exporter:null"}}),
                ("through", {"in": {"type": "receiver:prometheus_remote_write",
                                    "config": {"endpoint": f"127.0.0.1:{into}"}, "to": ["out"]},
                             "out": {"type": "exporter:prometheus_remote_write", "config": {
                                 "endpoint": f"http://127.0.0.1:{sink}/api/v1/write",
                                 "batch": {"max_samples": 2000, "max_delay_ms": 20}}}})):
            status, body, _ = admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}",
                                         body={"pipeline": {"cores": {"set": [0 if name == "through" else 1]},
                                                            "nodes": nodes}}, timeout=30)
            assert status == 200, body
        poster = subprocess.Popen([f"{BIN}/drover-bench", "rw-post", f"http://127.0.0.1:{into}/api/v1/write",
                                   str(seconds), "4", str(SERIES), "1"], stdout=subprocess.PIPE, text=True)
        wait_until(lambda: exported(admin) > 0, 20, "samples flowing", interval=0.05)
        time.sleep(seconds / 4)  # the measurement window opens a while in, not a synchronisation
        t0, n0 = time.monotonic(), exported(admin)
        time.sleep(seconds / 2)
        t1, n1 = time.monotonic(), exported(admin)
        sent = poster.communicate(timeout=seconds + 30)[0]
        rate = (n1 - n0) / (t1 - t0)
        ratio = rate / limit
        print("| run (500 series a request, one core) | samples/s |")
        print("| --- | ---: |")
        print(f"| receiver -> exporter:prometheus_remote_write, posted on to a second pipeline | {rate:,.0f} |")
        print(f"| protobuf-c + snappy: uncompress, unpack, pack, compress (drover-bench rw-loop) | {limit:,.0f} |")
        print()
        print(f"B32 remote write through drover / the wire loop = {ratio:.2f} (goal >= 0.5: "
              f"{'met' if ratio >= 0.5 else 'missed'}); the client: {sent.strip()}")
    finally:
        engine.stop()
        engine.cleanup()


if __name__ == "__main__":
    main()
