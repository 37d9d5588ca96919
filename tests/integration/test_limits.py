"""Limits (docs/operations.md, "Limits"): pipelines per engine, nodes per
pipeline and producer message size, each refused with an error naming it."""

import os
import unittest

import msgpack
import zmq

from harness import Admin, EngineTest, engine_yaml, free_port, read_ndjson, wait_until, generator_spec, zmq_file_spec

LIMITS = "  limits: { max_pipelines: 2, max_message_bytes: 2048 }\n"


class Limits(EngineTest):
    def setUp(self):
        self.http_port = free_port()
        self.engine = self.start_engine(engine_yaml(engine_extra=LIMITS).replace("HTTP", str(self.http_port)))
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()

    def put(self, name, spec):
        return self.admin.http("PUT", f"/api/v1/groups/default/pipelines/{name}", body=spec)

    def test_max_pipelines_refuses_the_next_create_with_409_naming_the_limit(self):
        self.assertEqual(self.put("a", generator_spec())[0], 200)
        self.assertEqual(self.put("b", generator_spec())[0], 200)
        status, body, _ = self.put("c", generator_spec())
        self.assertEqual(status, 409, body)
        self.assertEqual(body["error"]["kind"], "conflict")
        self.assertIn("engine.limits.max_pipelines", body["error"]["message"])
        self.assertEqual(self.admin.http("GET", "/api/v1/groups/default/pipelines/c")[0], 404, "nothing half made")
        # Changing an existing pipeline is not a new one.
        spec = generator_spec()
        spec["pipeline"]["nodes"]["g"]["config"]["rate"] = 20
        self.assertEqual(self.put("b", spec)[0], 200)
        self.assertEqual(self.admin.http("DELETE", "/api/v1/groups/default/pipelines/a")[0], 200)
        self.assertEqual(self.put("c", generator_spec())[0], 200)

    def test_more_than_64_nodes_is_an_invalid_spec(self):
        nodes = {f"t{i}": {"type": "processor:transform", "config": {"set": {"i": i}}, "to": [f"t{i + 1}"]}
                 for i in range(63)}
        nodes["g"] = {"type": "receiver:generator", "to": ["t0"]}
        nodes["t63"] = {"type": "exporter:null"}
        status, body, _ = self.put("big", {"pipeline": {"nodes": nodes}})
        self.assertEqual(status, 422, body)
        self.assertEqual(body["error"]["details"][0],
                         {"path": "nodes", "message": "65 nodes; a pipeline has at most 64"})
        del nodes["t62"]
        nodes["t61"]["to"] = ["t63"]
        self.assertEqual(self.put("big", {"pipeline": {"nodes": nodes}})[0], 200, "64 nodes are fine")

    def zmq_pipeline(self, name, ack, socket_type, linger):
        """A receiver:zmq pipeline writing NDJSON; a connected producer socket."""
        endpoint = f"tcp://127.0.0.1:{free_port()}"
        path = os.path.join(self.engine.out_dir, f"{name}.ndjson")
        self.assertEqual(self.put(name, zmq_file_spec(endpoint, path, ack))[0], 200)
        sock = zmq.Context.instance().socket(socket_type)
        sock.setsockopt(zmq.LINGER, linger)
        sock.connect(endpoint)
        return path, sock

    def test_a_message_over_max_message_bytes_is_refused_with_its_size_in_ack_mode(self):
        path, sock = self.zmq_pipeline("ack", True, zmq.DEALER, 0)
        self.addCleanup(sock.close)
        big = msgpack.packb({"seq": 1, "pad": "x" * 3000})
        sock.send_multipart([b"big", big])
        self.assertTrue(sock.poll(5000), "an answer to the large message")
        msg_id, answer = sock.recv_multipart()
        answer = msgpack.unpackb(answer)
        self.assertEqual((msg_id, answer["ok"]), (b"big", False))
        self.assertEqual(answer["error"], f"message of {len(big)} bytes is larger than "
                                          "engine.limits.max_message_bytes (2048)")
        sock.send_multipart([b"small", msgpack.packb({"seq": 2})])
        self.assertTrue(sock.poll(5000))
        self.assertEqual(sock.recv_multipart(), [b"small", msgpack.packb({"ok": True})])
        self.assertEqual([r["seq"] for r in read_ndjson(path)], [2])

    def test_a_message_over_max_message_bytes_is_dropped_and_counted_on_a_pull_front_door(self):
        path, sock = self.zmq_pipeline("pull", False, zmq.PUSH, 1000)
        sock.send(msgpack.packb({"seq": 1, "pad": "x" * 3000}))
        sock.send(msgpack.packb({"seq": 2}))
        sock.close()
        wait_until(lambda: read_ndjson(path), 10, "the small message exported")
        self.assertEqual([r["seq"] for r in read_ndjson(path)], [2])
        self.engine.wait_log(r"WARN broker: refused producer message pipeline=default:pull node=in "
                             r"reason=\"message of \d+ bytes is larger than engine.limits.max_message_bytes \(2048\)\"")
        # The broker reports its count with its heartbeat (every 5 s).
        wait_until(lambda: "drover_broker_refused_messages_total 1\n" in self.admin.http("GET", "/metrics")[1], 10,
                   "the refusal counted in /metrics")


if __name__ == "__main__":
    unittest.main(verbosity=2)
