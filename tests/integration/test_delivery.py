"""Delivery guarantees through crashes: an instance SIGKILLed under load loses
nothing — what it never acknowledged goes to another instance."""

import os
import signal
import unittest

from harness import Admin, EngineTest, free_port, read_ndjson, wait_until
from test_rollout import ENGINE, Load, zmq_spec


class Delivery(EngineTest):
    def test_kill_9_under_load_every_record_exported_at_least_once(self):
        http_port, port = free_port(), free_port()
        engine = self.start_engine(ENGINE.replace("HTTP", str(http_port)))
        admin = Admin(engine, http_port)
        admin.wait_ready()
        spec = zmq_spec(port, engine.out_dir, cores=2)
        # A slow exporter (an fsync-free file is fast; a filter chain is not
        # needed): batches queue up in the instance's credit window.
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/ingest", body=spec)
        self.assertEqual(status, 200, body)
        engine.wait_log(r"instance connected instance=default/ingest@1#1")
        with Load(port, rate=20000, batch=50) as load:
            wait_until(lambda: load.sent > 20000, 10, "load flowing")
            victim = engine.instances()["default/ingest@1#0"]
            os.kill(victim, signal.SIGKILL)
            engine.wait_log(r"instance crashed instance=default/ingest@1#0 exit=137")
            before = load.sent
            wait_until(lambda: load.sent > before + 20000, 10, "load after the crash")
        rows = []

        def exported():
            rows.clear()
            for name in os.listdir(engine.out_dir):
                rows.extend(read_ndjson(os.path.join(engine.out_dir, name)))
            return {r["seq"] for r in rows} >= set(range(load.sent))

        wait_until(exported, 30, f"every one of {load.sent} records exported")
        duplicates = len(rows) - len({r["seq"] for r in rows})
        print(f"sent={load.sent} exported={len(rows)} duplicates={duplicates} "
              f"redelivered={'redelivering' in engine.log_text()}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
