"""Records as the tests write and read them: NDJSON bodies, an NDJSON
file read while it is written, and records compared whole."""

import json
import os


def ndjson(records):
    """Records as NDJSON bytes, one JSON document a line."""
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def read_ndjson(path, killed=False):
    """The complete lines of an NDJSON file: one being written may end in
    part of a line, which is left for the next read. killed: a writer was
    SIGKILLed, and the line it was writing is left cut short on its own
    (exporter:file goes on from a new line): such lines are skipped."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for line in f:
            if not line.strip() or not line.endswith("\n"):
                continue
            try:
                rows.append(json.loads(line))
            except ValueError:
                if not killed:
                    raise
    return rows


def unobserved(rows):
    """rows (dicts) without observed_time_unix_nano, for a test comparing
    records whole: every receiver stamps a log record with the time it took
    it (docs/operations.md, "When a record was observed"), which no test
    can know. A log record without one is an error."""
    out = []
    for row in rows:
        row = dict(row)
        observed = row.pop("observed_time_unix_nano", None)
        if row.get("signal", "log") == "log" and not isinstance(observed, int):
            raise AssertionError(f"a record without observed_time_unix_nano: {row}")
        out.append(row)
    return out
