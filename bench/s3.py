#!/usr/bin/env python3
"""B34: exporter:s3 (issue 52). receiver:generator -> exporter:s3 on one
core, writing uncompressed ndjson objects (16 MiB, closed every 2 s too) to
the SigV4-checking front of the tests (tests/otel-js/s3_front.js) in its
sink mode (every request checked, answered as S3 answers, nothing stored:
s3rver writing to disk would be what is measured), against
receiver:generator -> exporter:file writing the same ndjson, uncompressed,
in the same run; each figure is the exporter's records_out per second over
the middle half of its run. Goal >= 0.5. Then the instance's memory while S3
is down for SECONDS*4 under load (a generator at 50,000 records/s): its
peak RSS against the exporter's queue bound (report).

Usage: bench/s3.py [SECONDS] [--smoke]   (default 8)"""

import os
import sys
import tempfile
import time

os.environ.setdefault("DROVER_CHECK_STATUS_CACHE", "0")  # measured as users get it
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, proc_status, wait_until  # noqa: E402

RECORD = {"msg": "GET /api/v1/orders 200", "level": "info", "service": "orders", "pad": "x" * 120}


def exported(admin, name):
    status, body, _ = admin.http("GET", f"/api/v1/groups/default/pipelines/{name}/status")
    nodes = ((body.get("instances") or [{}])[0].get("nodes") or {}) if status == 200 else {}
    return nodes.get("out", {}).get("records_out", 0)


def rate(admin, name, seconds):
    wait_until(lambda: exported(admin, name) > 0, 30, f"{name} exporting", interval=0.05)
    time.sleep(seconds / 4)  # the window opens a while in, not a synchronisation
    t0, n0 = time.monotonic(), exported(admin, name)
    time.sleep(seconds / 2)
    return (exported(admin, name) - n0) / (time.monotonic() - t0)


def put(admin, name, out, generator_rate=0):
    status, body, _ = admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body={"pipeline": {
        "cores": {"set": [0]}, "nodes": {
            "gen": {"type": "receiver:generator", "config": {"rate": generator_rate, "record": RECORD},
                    "to": ["out"]},
            "out": out}}}, timeout=30)
    assert status == 200, body


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else (0.5 if smoke else 8.0)
    from test_otel_sdk import install_client
    why = install_client()
    if why:
        print(f"B34 skipped: {why}")
        return
    from s3 import KEY_ID, S3, SECRET
    s3 = S3(sink=True)
    port = free_port()
    out_dir = tempfile.mkdtemp(prefix="drv-b34-")
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 200\n").replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)
        put(admin, "file", {"type": "exporter:file", "config": {"path": f"{out_dir}/b34.ndjson"}})
        file_rate = rate(admin, "file", seconds)
        admin.http("DELETE", "/api/v1/groups/default/pipelines/file", timeout=30)
        object_bytes = 16 << 20
        s3_out = {"type": "exporter:s3", "config": {
            "bucket": "archive", "endpoint": s3.endpoint, "path_style": True, "compression": "none",
            "max_object_bytes": object_bytes, "max_object_age_secs": 2,
            "credentials": {"access_key_id": KEY_ID, "secret_access_key": SECRET}}}
        put(admin, "s3", s3_out)
        s3_rate = rate(admin, "s3", seconds)
        ratio = s3_rate / file_rate
        print("| run (one core, uncompressed ndjson) | records/s |")
        print("| --- | ---: |")
        print(f"| receiver:generator -> exporter:s3 (16 MiB objects, to the SigV4-checking front) | {s3_rate:,.0f} |")
        print(f"| receiver:generator -> exporter:file | {file_rate:,.0f} |")
        print()
        print(f"B34 exporter:s3 / exporter:file = {ratio:.2f} (goal >= 0.5: {'met' if ratio >= 0.5 else 'missed'})")
        #  S3 down under load: the instance's memory is the queue's, no more.
        put(admin, "s3", s3_out, generator_rate=50000)
        time.sleep(1)  # a replace's new generation settles in, not a synchronisation
        s3.stop()
        (pid,) = [p for name, p in engine.instances().items() if "/s3@" in name] or [None]
        peak, end = 0, time.monotonic() + seconds * 4
        while time.monotonic() < end:
            peak = max(peak, int((proc_status(pid, "VmRSS") or "0 kB").split()[0]))
            time.sleep(0.2)
        queue = 2 * object_bytes + (16 << 20)
        print(f"B34 S3 down {seconds * 4:.0f} s at 50,000 records/s: instance peak RSS {peak / 1024:.0f} MiB, "
              f"the queue's bound {queue >> 20} MiB (report)")
    finally:
        engine.stop()
        engine.cleanup()
        s3.close()


if __name__ == "__main__":
    main()
