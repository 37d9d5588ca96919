#!/usr/bin/env python3
"""B35: OTTL statements (docs/ottl.md; issue 53). drover-bench node-loop
builds one instance's DAG (receiver:zmq -> the processor -> exporter:null)
in its own process and feeds it one 64-record batch of OTLP-shaped log
records (a body, five attributes, a resource) over and over, pinned to one
CPU. processor:transform with four statements (a set with a where on a
resource attribute, a replace_pattern, a delete_key, a keep_keys) against
processor:lua doing the same in a script (goal >= 2.0), and against the old
set and delete forms doing the part they can (no where, no pattern: goal
>= 0.7); "ottl-none" is the DAG alone on the same records.

Usage: bench/ottl.py [SECONDS] [--smoke]   (default 4 s per run, best of 3)"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import BIN  # noqa: E402

BENCH = os.path.join(BIN, "drover-bench")
PIN = ["taskset", "-c", "0"] if 0 in os.sched_getaffinity(0) else []


def run(kind, seconds):
    out = subprocess.run([*PIN, BENCH, "node-loop", kind, str(seconds)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"drover-bench node-loop {kind} failed: {out.stderr}{out.stdout}")
    return float(re.search(r"records_per_sec=([\d.]+)", out.stdout).group(1))


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else 4.0
    best = {}
    for _ in range(1 if smoke else 3):  # interleaved: drift on a shared machine hits all alike
        for kind in ("ottl-none", "ottl", "ottl-lua", "ottl-old"):
            best[kind] = max(best.get(kind, 0), run(kind, seconds))
    print("| run (one core, 64-record batches of OTLP-shaped logs) | records/s | ns/record |")
    print("| --- | ---: | ---: |")
    for kind, label in (("ottl-none", "the DAG alone"),
                        ("ottl", "processor:transform, four OTTL statements"),
                        ("ottl-lua", "processor:lua, the same in a script"),
                        ("ottl-old", "processor:transform, set and delete (the part they can)")):
        print(f"| {label} | {best[kind]:,.0f} | {1e9 / best[kind]:.0f} |")
    lua, old = best["ottl"] / best["ottl-lua"], best["ottl"] / best["ottl-old"]
    print()
    print(f"B35 OTTL / Lua = {lua:.2f} (goal >= 2.0: {'met' if lua >= 2.0 else 'missed'}); "
          f"OTTL / the old forms = {old:.2f} (goal >= 0.7: {'met' if old >= 0.7 else 'missed'})")


if __name__ == "__main__":
    main()
