"""Delivery guarantees through crashes: an instance SIGKILLed under load loses
nothing — what it never acknowledged goes to another instance."""

import json
import os
import signal
import unittest

from harness import Admin, EngineTest, free_port, generator_spec, read_ndjson, wait_until
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


    def test_a_file_cut_mid_line_by_a_kill_goes_on_from_a_new_line(self):
        http_port = free_port()
        engine = self.start_engine(ENGINE.replace("HTTP", str(http_port)))
        admin = Admin(engine, http_port)
        admin.wait_ready()
        path = os.path.join(engine.out_dir, "cut.ndjson")
        with open(path, "w") as f:
            f.write('{"whole": 1}\n{"cut": tr')  # what a writer killed mid-write leaves
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/g", body=generator_spec(path, rate=100))
        self.assertEqual(status, 200, body)
        lines = wait_until(lambda: (lambda ls: ls if len(ls) >= 5 else None)(open(path).read().splitlines()), 10,
                           "records after the cut line")
        self.assertEqual(lines[:2], ['{"whole": 1}', '{"cut": tr'], "the cut line stays as it was, on its own")
        for line in lines[2:-1]:
            json.loads(line)  # every record after it is whole: none glued to the cut
        engine.wait_log(r"cut.ndjson ended in the middle of a line \(a writer was killed mid-write\)")

    def start_ack_pipeline(self):
        http_port, port = free_port(), free_port()
        engine = self.start_engine(ENGINE.replace("HTTP", str(http_port)))
        admin = Admin(engine, http_port)
        admin.wait_ready()
        spec = zmq_spec(port, engine.out_dir, cores=2)
        spec["pipeline"]["nodes"]["in"]["config"]["ack"] = True
        status, body, _ = admin.http("PUT", "/api/v1/groups/default/pipelines/ingest", body=spec)
        self.assertEqual(status, 200, body)
        engine.wait_log(r"instance connected instance=default/ingest@1#1")
        return engine, f"tcp://127.0.0.1:{port}"

    def exported_seqs(self, engine):
        rows = []
        for name in os.listdir(engine.out_dir):
            rows.extend(read_ndjson(os.path.join(engine.out_dir, name)))
        return [r["seq"] for r in rows]

    def test_ack_mode_acknowledges_each_message_once_exported_and_refuses_junk(self):
        import subprocess
        import msgpack
        import zmq
        from harness import BIN
        engine, endpoint = self.start_ack_pipeline()
        proc = subprocess.run([os.path.join(BIN, "drover-produce"), endpoint, "500", "10", "10000"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("acked=500 records=5000", proc.stdout)
        # acknowledged means exported: the records are in the files already
        self.assertEqual(sorted(self.exported_seqs(engine)), list(range(5000)))
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
        for junk in (b"\xc1", msgpack.packb([1, 2]), msgpack.packb([{"a": 1}, "x"]), msgpack.packb("text"),
                     msgpack.packb(5)):
            sock.send_multipart([b"id-1", junk])
            self.assertTrue(sock.poll(5000), "an answer to junk")
            msg_id, answer = sock.recv_multipart()
            answer = msgpack.unpackb(answer)
            self.assertEqual((msg_id, answer["ok"]), (b"id-1", False))
            self.assertTrue(answer["error"])
        sock.send_multipart([b"id-2", msgpack.packb({"seq": 99999})])
        self.assertTrue(sock.poll(5000))
        self.assertEqual(msgpack.unpackb(sock.recv_multipart()[1]), {"ok": True})
        sock.close()

    def test_a_retrying_producer_loses_nothing_when_the_broker_is_killed(self):
        import subprocess
        from harness import BIN, children_of, cmdline
        engine, endpoint = self.start_ack_pipeline()
        producer = subprocess.Popen([os.path.join(BIN, "drover-produce"), endpoint, "3000", "10", "30000"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: len(self.exported_seqs(engine)) > 5000, 20, "acknowledged traffic flowing")
        broker = next(c for c in children_of(engine.pid) if cmdline(c) == "drover-broker")
        os.kill(broker, signal.SIGKILL)
        engine.wait_log(r"broker exited, restarting exit=137")
        out, err = producer.communicate(timeout=90)
        self.assertEqual(producer.returncode, 0, err)
        self.assertIn("acked=3000 records=30000", out)
        seqs = self.exported_seqs(engine)
        self.assertEqual(set(seqs), set(range(30000)), "every record exported at least once")
        print(f"exported={len(seqs)} duplicates={len(seqs) - len(set(seqs))} {out.strip()}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
