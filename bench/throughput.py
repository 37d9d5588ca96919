#!/usr/bin/env python3
"""B1 throughput: records/s from one producer through the broker to 1 and to 2
instances (transform + filter -> exporter:null), 64-record msgpack batches of
~80-byte records, against a baseline of raw ZeroMQ forwarding the same bytes
without decoding (producer -> tcp -> proxy -> ipc -> consumer, the transports
drover uses).

Usage: bench/throughput.py [SECONDS] [--smoke]   (default 6 s per run)

drover's figure is the rise of drover_instance_records_in_total (summed over
instances) between two samples of /metrics, one second in and at the end; the
baseline's is what its consumer counts after one second of warm-up."""

import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, BIN, Engine, engine_yaml, free_port  # noqa: E402

BENCH = os.path.join(BIN, "drover-bench")
RECORDS_PER_BATCH = 64

CONFIG = engine_yaml(engine_extra="  heartbeat_interval_ms: 100\n  credit_window: 64\n", pipelines="""
      b1:
        cores: { count: CORES }
        nodes:
          in: { type: receiver:zmq, config: { endpoint: "tcp://127.0.0.1:PORT" }, to: [stamp] }
          stamp: { type: processor:transform, config: { set: { env: prod } }, to: [keep] }
          keep: { type: processor:filter, config: { field: level, op: ge, value: 3 }, to: [out] }
          out: { type: exporter:null }
""")


def records_in(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(int(v) for v in re.findall(r'^drover_instance_records_in_total\{[^}]*\} (\d+)$', text, re.M))


def drover(cores, seconds):
    http, port = free_port(), free_port()
    engine = Engine(CONFIG.replace("HTTP", str(http)).replace("PORT", str(port)).replace("CORES", str(cores))).start()
    try:
        admin = Admin(engine, http)
        admin.wait_ready()
        producer = subprocess.Popen([BENCH, "produce", f"tcp://127.0.0.1:{port}", str(seconds)],
                                    stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)  # warm-up before the first sample (a measurement window, not synchronisation)
        t0, c0 = time.monotonic(), records_in(http)
        time.sleep(max(seconds - 1.5, 0.5))
        t1, c1 = time.monotonic(), records_in(http)
        producer.wait(timeout=seconds + 10)
        return (c1 - c0) / (t1 - t0)
    finally:
        engine.cleanup()


def baseline(seconds):
    d = tempfile.mkdtemp(prefix="drv-b1-")
    port = free_port()
    back = f"ipc://{d}/back.sock"
    proxy = subprocess.Popen([BENCH, "proxy", f"tcp://127.0.0.1:{port}", back, str(seconds + 1)])
    consumer = subprocess.Popen([BENCH, "consume", back, str(seconds)], stdout=subprocess.PIPE, text=True)
    time.sleep(0.2)  # let the proxy bind before the producer connects (zmq would retry anyway)
    producer = subprocess.Popen([BENCH, "produce", f"tcp://127.0.0.1:{port}", str(seconds)],
                                stdout=subprocess.PIPE, text=True)
    out, _ = consumer.communicate(timeout=seconds + 10)
    producer.wait(timeout=seconds + 10)
    proxy.wait(timeout=seconds + 10)
    return float(re.search(r"messages_per_sec=([\d.]+)", out).group(1)) * RECORDS_PER_BATCH


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    smoke = "--smoke" in sys.argv
    seconds = float(args[0]) if args else (2.0 if smoke else 6.0)
    base = baseline(seconds)
    one = drover(1, seconds)
    two = drover(2, seconds)
    print("| figure | drover | baseline | ratio | goal |")
    print("| --- | --- | --- | --- | --- |")
    for name, value in (("B1 records/s, 1 instance", one), ("B1 records/s, 2 instances", two)):
        print(f"| {name} | {value:,.0f} | {base:,.0f} (raw zmq proxy) | {value / base:.2f} | "
              f">= 0.50 and >= 2,000,000 |")
    if smoke:
        assert one > 0 and two > 0 and base > 0, "every path moved records"


if __name__ == "__main__":
    main()
