#!/usr/bin/env python3
"""B28 OTLP-ATTR-OTLP, otap-dataflow's own scenario (docs/benchmarks.md):
OTLP/HTTP logs in -> rename one attribute -> OTLP/HTTP out, on one core.

drover-bench otlp-post (CPU 1) sends protobuf requests of 100 ~300-byte
LogRecords over 8 keep-alive connections, flat out, to receiver:otlp on
CPU 0 -> processor:transform renaming attributes["seq"] to
attributes["sequence"] -> exporter:otlp (protobuf, no compression) -> a sink
on CPU 1 (receiver:otlp -> exporter:null, another pipeline of the same
droverd). Figures: logs/s the sink received (delivered), and the measured
instance's CPU use of its core; against the same pipeline without the
processor (OTLP pass-through) in the same run. Goal (issue 41): >= 600,000
logs/s delivered.

Usage: bench/otlp_attr.py [SECONDS] [--smoke]   (default 6 s per run)"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import free_port  # noqa: E402
from ingest import LOAD, engine_with, pipeline, rate  # noqa: E402

import subprocess  # noqa: E402
import time  # noqa: E402


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(seconds, rename):
    port, sink = free_port(), free_port()
    middle = {"t": {"type": "processor:transform",
                    "config": {"rename": {'attributes["seq"]': 'attributes["sequence"]'}}, "to": ["out"]}}
    nodes = {"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{port}"},
                    "to": ["t" if rename else "out"]},
             **(middle if rename else {}),
             "out": {"type": "exporter:otlp", "config": {"endpoint": f"http://127.0.0.1:{sink}",
                                                         "compression": "none"}}}
    engine, http = engine_with({
        "b28sink": pipeline({"in": {"type": "receiver:otlp", "config": {"endpoint": f"127.0.0.1:{sink}"},
                                    "to": ["out"]}, "out": {"type": "exporter:null"}}, 1),
        "b28": pipeline(nodes, 0)})
    try:
        worker = next(pid for title, pid in engine.instances().items() if title.startswith("default/b28@"))
        load = subprocess.Popen([*LOAD, "otlp-post", f"http://127.0.0.1:{port}/v1/logs", str(seconds), "8", "0"],
                                stdout=subprocess.PIPE, text=True)
        before, started = cpu_seconds(worker), time.monotonic()
        delivered = rate(http, "b28sink", seconds)
        used = (cpu_seconds(worker) - before) / (time.monotonic() - started)
        load.communicate(timeout=seconds + 15)
        return delivered, used
    finally:
        engine.cleanup()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else (2.0 if "--smoke" in sys.argv else 6.0)
    through, through_cpu = run(seconds, False)
    renamed, renamed_cpu = run(seconds, True)
    print("| figure | logs/s delivered | core use | goal |")
    print("| --- | ---: | ---: | --- |")
    print(f"| B28 OTLP -> rename attribute -> OTLP, one core | {renamed:,.0f} | {renamed_cpu:.0%} | >= 600,000: "
          f"{'met' if renamed >= 600000 else 'missed'} |")
    print(f"| B28 baseline: OTLP -> OTLP pass-through, same run | {through:,.0f} | {through_cpu:.0%} | |")
    print(f"| B28 rename / pass-through | {renamed / max(through, 1):.2f} | | |")


if __name__ == "__main__":
    main()
