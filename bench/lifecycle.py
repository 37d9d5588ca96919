#!/usr/bin/env python3
"""Measures instance start-up and crash recovery through the real binaries.

  spawn_to_ready: fork -> READY of one instance, as droverd measures it
                  (startup_us in its 'instance ready' log line), over N spawns
  kill_to_ready:  SIGKILL of an instance (taken here, before kill) -> its
                  replacement's 'instance ready' line (droverd's log clock)

  startup phases: where spawn_to_ready goes, from droverd's spawn time
                  (spawned_at_us) and the worker's own monotonic timestamps
                  (its debug-level 'startup' line): until the worker's code
                  runs (from the zygote: its request; by exec: fork, exec and
                  the dynamic loading until main()), the zygote's two forks,
                  reparenting and pinning with the zmq context and sockets,
                  the HELLO->SPEC round trip, building the DAG, READY until
                  droverd sees it
  exec baseline:  spawning `drover-worker` with no arguments (prints usage,
                  exits) against /bin/true: the cost of loading its shared
                  libraries, measured from here with fork+exec+wait

Usage: bench/lifecycle.py [N]   (default 20; run after `make build`)"""

import os
import re
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import BIN, Engine, wait_until  # noqa: E402

CONFIG = """
engine:
  run_dir: {RUN}
  admin: { http: "" }
groups:
  default:
    pipelines:
      p:
        nodes:
          g: { type: receiver:generator, config: { rate: 10 }, to: [out] }
          out: { type: exporter:file, config: { path: "{OUT}/p.ndjson" } }
        policies:
          restart: { max_restarts: 1000, window_secs: 1 }
"""

READY = re.compile(r"^(\S+) INFO droverd: instance ready instance=default/p@1#0 pid=(\d+) startup_us=(\d+) "
                   r"spawned_at_us=(\d+)", re.M)
STARTUP = re.compile(r"DEBUG worker\[default/p@1#0\]: startup instance=\S+ main_us=(\d+) sockets_us=(\d+) "
                     r"hello_us=(\d+) spec_us=(\d+) dag_us=(\d+)")
PHASES = ("to the worker's code (exec: loading)", "forks, pinning, zmq context+sockets", "HELLO->SPEC round trip",
          "build DAG", "READY to droverd")


def phases(text):
    """Per spawn: the five phases in µs, pairing each worker's startup line
    with droverd's next ready line (one instance, spawned one at a time)."""
    rows = []
    for ready, start in zip(READY.findall(text), STARTUP.findall(text)):
        spawned, startup = int(ready[3]), int(ready[2])
        main_us, sockets, hello, spec, dag = (int(x) for x in start)
        rows.append((main_us - spawned, sockets - main_us, spec - hello, dag - spec, spawned + startup - dag))
    return rows


def spawn_ms(cmd, n):
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def stamp(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    pause = 0.0 if "--smoke" in sys.argv else 1.05
    engine = Engine(CONFIG).start(env={"DROVER_LOG": "debug"})
    kill_to_ready = []
    try:
        wait_until(lambda: READY.findall(engine.log_text()), 10, "first ready")
        for i in range(rounds):
            readies = READY.findall(engine.log_text())
            # Host pid from /proc: the log's pid is the one inside droverd's namespace.
            pid = engine.wait_instances(["default/p@1#0"])["default/p@1#0"]
            # Pace rounds past the 1 s restart window, so each kill is a one-off
            # crash (restarted at once) and not a crash loop (backed off).
            time.sleep(pause)
            killed_at = time.time()
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: len(READY.findall(engine.log_text())) > len(readies), 10, "replacement ready")
            ready_at = stamp(READY.findall(engine.log_text())[-1][0])
            kill_to_ready.append((ready_at - killed_at) * 1000)
        startups = [int(m[2]) / 1000 for m in READY.findall(engine.log_text())]
        rows = phases(engine.log_text())
    finally:
        engine.cleanup()
    print(f"spawn_to_ready_ms  n={len(startups)} median={statistics.median(startups):.2f} "
          f"p90={sorted(startups)[int(len(startups) * 0.9) - 1]:.2f}")
    print(f"kill_to_ready_ms   n={len(kill_to_ready)} median={statistics.median(kill_to_ready):.2f} "
          f"p90={sorted(kill_to_ready)[int(len(kill_to_ready) * 0.9) - 1]:.2f} (log clock: 1 ms resolution)")
    print(f"startup phases, median of {len(rows)} spawns (ms):")
    for i, name in enumerate(PHASES):
        print(f"  {name:30} {statistics.median(r[i] for r in rows) / 1000:6.2f}")
    n = 20 if "--smoke" in sys.argv else 200
    true_ms, worker_ms = spawn_ms(["/bin/true"], n), spawn_ms([f"{BIN}/drover-worker"], n)
    print(f"exec baseline, median of {n} (ms): /bin/true {true_ms:.2f}, drover-worker (usage, exit) {worker_ms:.2f}, "
          f"difference {worker_ms - true_ms:.2f}")


if __name__ == "__main__":
    main()
