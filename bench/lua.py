#!/usr/bin/env python3
"""B13: processor:lua against the built-in processor:transform doing the
same thing (set one field, rename one), records/s on one core, in the same
run: drover-bench node-loop builds one instance's DAG (receiver:zmq -> the
processor -> exporter:null) in its own process and feeds it one 64-record
batch of 7-field log records over and over, pinned to one CPU. "none" is
the DAG alone (an empty transform), so what the processor itself costs
per record is the difference. drover-bench lua-split times the three parts
of a Lua call: building the record's table, the call itself, and turning
the returned table back into a record. lua-lazy is the same script with
record: lazy (the record read where it lies, only what the script touches
made into Lua values). The same four again on wide records (40 fields, an
enriched Kubernetes log's; the script touches the same three).

Goal (issue 13): lua >= 0.4 of transform and >= 1,000,000 records/s.

Usage: bench/lua.py [SECONDS] [--smoke]   (default 5 s per run, best of 3)"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import BIN  # noqa: E402

BENCH = os.path.join(BIN, "drover-bench")
PIN = ["taskset", "-c", "0"] if 0 in os.sched_getaffinity(0) else []


def run(*args):
    out = subprocess.run([*PIN, BENCH, *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"drover-bench {' '.join(args)} failed: {out.stderr}{out.stdout}")
    return dict(re.findall(r"(\w+)=(-?[\d.]+)", out.stdout))  # a difference (call_ns) can be below 0 on a busy machine


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else 5.0
    rounds = 1 if smoke else 3
    best = {}
    kinds = ("none", "transform", "lua", "lua-lazy")
    for _ in range(rounds):  # interleaved, so drift on a shared machine hits them all alike
        for kind in kinds + tuple(f"{k}-wide" for k in kinds):
            rate = float(run("node-loop", kind, str(seconds))["records_per_sec"])
            best[kind] = max(best.get(kind, 0), rate)
    split = run("lua-split", str(seconds))
    ns = {k: 1e9 / v for k, v in best.items()}
    ratio = best["lua"] / best["transform"]
    print("| run | records/s (one core) | ns/record | ns/record above the bare DAG |")
    print("| --- | ---: | ---: | ---: |")
    for wide in ("", "-wide"):
        shape = "40 fields" if wide else "7 fields"
        for kind, label in (("none", "DAG alone (receiver:zmq -> exporter:null)"),
                            ("transform", "processor:transform (set + rename)"),
                            ("lua", "processor:lua (the same in Lua)"),
                            ("lua-lazy", "processor:lua, record: lazy")):
            k = kind + wide
            print(f"| {label}, {shape} | {best[k]:,.0f} | {ns[k]:.0f} | {ns[k] - ns['none' + wide]:.0f} |")
    print()
    print(f"B13 lua/transform = {ratio:.2f} (goal >= 0.4: {'met' if ratio >= 0.4 else 'missed'}); "
          f"lua {best['lua']:,.0f} records/s (goal >= 1,000,000: {'met' if best['lua'] >= 1e6 else 'missed'})")
    lazy = best["lua-lazy"] / best["transform"]
    print(f"B13 with record: lazy: lua/transform = {lazy:.2f} (goal >= 0.4: {'met' if lazy >= 0.4 else 'missed'}); "
          f"on 40-field records {best['lua-lazy-wide'] / best['transform-wide']:.2f} "
          f"(tables {best['lua-wide'] / best['transform-wide']:.2f})")
    print()
    print(f"Where a Lua record's time goes (lua-split, ns/record): building its table "
          f"{float(split['build_table_ns']):.0f}, the call {float(split['call_ns']):.0f}, back to a record "
          f"{float(split['to_record_ns']):.0f}; total {float(split['total_ns']):.0f} (the rest of "
          f"{ns['lua'] - ns['none']:.0f} above the bare DAG is the protected call per record and the hook)")


if __name__ == "__main__":
    main()
