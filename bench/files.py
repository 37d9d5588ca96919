#!/usr/bin/env python3
"""B23/B24: reading files (issue 38). B23: a LINES-line file (about 120
bytes a line) read from its beginning by receiver:file into exporter:file on
one core, against rsyslog's imfile -> omfile reading the same file in the
same run (the C peer an operator would pick; its template writes each
line's message as it was): lines/s from the start until the last line is
out (drover: its node's records_out in /status; rsyslog: its output's
size). Goal >= 1.5. B24: the same number of CRI lines with kubernetes: true
(partial lines among them), drover alone: lines/s.

Usage: bench/files.py [LINES] [--smoke]   (default 300000, best of 3)"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import Admin, Engine, engine_yaml, free_port, wait_until  # noqa: E402

RSYSLOGD = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"


def write_text(path, lines):
    with open(path, "w") as f:
        for n in range(lines):
            f.write(f"2026-11-26T10:00:00Z host app[42]: request {n:09d} served in 3ms path=/api/items/{n % 977}"
                    f" status=200 bytes={n % 4096}\n")
    return os.path.getsize(path)


def write_cri(path, lines):
    """CRI lines, one in ten partial (it goes on in the next): the records they make."""
    partial = 0
    with open(path, "w") as f:
        for n in range(lines):
            tag = "P" if n % 10 == 9 and n + 1 < lines else "F"
            partial += tag == "P"
            f.write(f"2026-11-26T10:00:00.{n % 1000000000:09d}Z stdout {tag} request {n:09d} served in 3ms"
                    f" path=/api/items/{n % 977} status=200\n")
    return lines - partial


def drover_rate(path, lines, records, cri=False):
    """Lines/s of receiver:file reading path from its beginning."""
    port = free_port()
    engine = Engine(engine_yaml(engine_extra="  heartbeat_interval_ms: 50\n").replace("HTTP", str(port))).start()
    try:
        admin = Admin(engine, port)
        admin.wait_ready(20)
        config = {"include": [path], "start_at": "beginning"}
        if cri:
            config.update(format="cri", kubernetes=True)
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:file", "config": config, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{engine.out_dir}/out.ndjson"}}}}}

        def out():
            st = admin.http("GET", "/api/v1/groups/default/pipelines/b/status")[1]
            insts = st.get("instances") or [{}]
            return insts[0].get("nodes", {}).get("out", {}).get("records_out", 0)
        started = time.monotonic()
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/b", body=spec, timeout=30)
        assert status == 200, body
        wait_until(lambda: out() >= records, 120, f"{records} records out", interval=0.005)
        return lines / (time.monotonic() - started)
    finally:
        engine.stop()
        engine.cleanup()


def rsyslog_rate(path, lines, size):
    """Lines/s of rsyslogd's imfile reading path from its beginning into omfile."""
    work = tempfile.mkdtemp(prefix="drover-rsyslog-")
    try:
        out = os.path.join(work, "out.log")
        conf = os.path.join(work, "rsyslog.conf")
        with open(conf, "w") as f:
            f.write(f'''global(workDirectory="{work}")
module(load="imfile" mode="inotify")
template(name="line" type="string" string="%rawmsg%\\n")
input(type="imfile" file="{path}" tag="app" ruleset="copy" freshStartTail="off")
ruleset(name="copy") {{ action(type="omfile" file="{out}" template="line") }}
''')
        started = time.monotonic()
        proc = subprocess.Popen([RSYSLOGD, "-n", "-f", conf, "-i", os.path.join(work, "pid")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: os.path.exists(out) and os.path.getsize(out) >= size, 120,
                       "rsyslog's output complete", interval=0.005)
            return lines / (time.monotonic() - started)
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        shutil.rmtree(work, True)


def main():
    smoke = "--smoke" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    lines = int(args[0]) if args else 300000
    rounds = 1 if smoke else 3
    work = tempfile.mkdtemp(prefix="drover-files-bench-")
    try:
        text, cri = os.path.join(work, "app.log"), os.path.join(work, "0.log")
        size = write_text(text, lines)
        cri_records = write_cri(cri, lines)
        ours = theirs = kube = 0.0
        for _ in range(rounds):
            ours = max(ours, drover_rate(text, lines, lines))
            if os.path.exists(RSYSLOGD):
                theirs = max(theirs, rsyslog_rate(text, lines, size))
            kube = max(kube, drover_rate(cri, lines, cri_records, cri=True))
        print(f"| run ({lines:,} lines, {size / lines:.0f} bytes each) | lines/s |")
        print("| --- | ---: |")
        print(f"| receiver:file -> exporter:file | {ours:,.0f} |")
        print(f"| rsyslog imfile -> omfile | {theirs:,.0f} |" if theirs else "| rsyslog | not installed |")
        print(f"| receiver:file, format cri, kubernetes: true -> exporter:file | {kube:,.0f} |")
        print()
        if theirs:
            ratio = ours / theirs
            print(f"B23 receiver:file / rsyslog imfile = {ratio:.2f} (goal >= 1.5: {'met' if ratio >= 1.5 else 'missed'})")
        print(f"B24 CRI lines with kubernetes: true = {kube:,.0f} lines/s ({kube / ours:.2f} of plain text)")
    finally:
        shutil.rmtree(work, True)


if __name__ == "__main__":
    main()
