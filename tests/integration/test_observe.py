"""What operators watch, through the real binaries: pipeline totals that a
replace or a crash never takes back (/metrics and /status), per-node
counters in /status, the event stream as Server-Sent Events (in order,
topic prefixes, a slow client that cannot slow the engine)."""

import os
import re
import signal
import threading
import unittest

import msgpack
import zmq

from harness import EngineTest, foreign_threads, wait_until
from streams import SSE, Collector


def metric(text, name, **labels):
    """The value of one sample of name whose labels include labels (None: absent)."""
    for line in text.splitlines():
        m = re.match(r"(\w+)\{([^}]*)\} (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if all(have.get(k) == str(v) for k, v in labels.items()):
            return int(float(m.group(3)))
    return None


class Totals(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  heartbeat_interval_ms: 100\n")

    def put(self, tag, count=100):
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": 0, "count": count, "record": {"tag": tag}},
                   "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=spec)
        self.assertEqual(status, 200, body)

    def metrics(self):
        return self.admin.http("GET", "/metrics")[1]

    def status(self):
        return self.admin.http("GET", "/api/v1/groups/default/pipelines/p/status")[1]

    def test_a_replace_and_a_crash_never_take_the_pipeline_totals_back(self):
        self.put("a")
        wait_until(lambda: metric(self.metrics(), "drover_pipeline_records_in_total", pipeline="p") == 100, 10,
                   "generation 1's 100 records counted")
        self.put("b")  # a replace: generation 2 generates 100 more
        text = wait_until(lambda: (lambda t: t if metric(t, "drover_pipeline_records_out_total", pipeline="p") == 200
                                   else None)(self.metrics()), 10, "200 records over both generations")
        self.assertEqual(metric(text, "drover_pipeline_records_in_total", pipeline="p"), 200)
        self.assertEqual(metric(text, "drover_instance_records_in_total", pipeline="p", generation=2), 100,
                         "the instance counter is the process's own")
        self.assertEqual(metric(text, "drover_instance_records_in_total", pipeline="p", generation=1), None,
                         "generation 1 is gone")
        self.assertEqual(metric(text, "drover_node_records_out_total", pipeline="p", node="in", generation=2), 100)
        status = self.status()
        self.assertEqual(status["totals"], {"records_in": 200, "records_out": 200, "errors": 0})
        [inst] = status["instances"]
        self.assertEqual(inst["nodes"]["in"], {"records_in": 100, "records_out": 100, "records_dropped": 0,
                                               "errors": 0})
        self.assertEqual(inst["nodes"]["out"]["records_out"], 100)

        pid = self.engine.wait_instances(["default/p@2#0"])["default/p@2#0"]  # the host's pid, not droverd's
        os.kill(pid, signal.SIGKILL)  # restarted on its core: the new process counts from zero
        text = wait_until(lambda: (lambda t: t if metric(t, "drover_instance_records_in_total", pipeline="p")
                                   == 100 and metric(t, "drover_instance_restarts_total", pipeline="p") == 1
                                   else None)(self.metrics()), 15, "the restarted instance's own 100 records")
        self.assertEqual(metric(text, "drover_pipeline_records_in_total", pipeline="p"), 300)
        self.assertEqual(self.status()["totals"]["records_out"], 300)

    def test_resizes_keep_every_view_of_the_totals_equal_to_what_was_sent(self):
        """Issue 35: after a resize the pipeline totals in status and /metrics
        once dropped (1,500 for 2,000 received). Records sent over the broker
        to two cores, then one, two and one again: every view counts each."""
        from harness import Producer, free_port
        port = free_port()

        def put(cores):
            spec = {"pipeline": {"cores": {"count": cores}, "nodes": {
                "in": {"type": "receiver:zmq", "config": {"endpoint": f"tcp://127.0.0.1:{port}"}, "to": ["out"]},
                "out": {"type": "exporter:null"}}}}
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=spec, timeout=60)
            self.assertEqual(status, 200, body)
        put(2)
        producer = Producer(f"tcp://127.0.0.1:{port}")
        self.addCleanup(producer.close)
        sent = 0
        for cores in (1, 2, 1):
            for b in range(100):
                producer.send([{"b": b, "k": k} for k in range(10)])
            sent += 1000
            put(cores)
            wait_until(lambda: self.status()["totals"]["records_in"] == sent, 15, f"{sent} records in the totals")
            text = self.metrics()
            self.assertEqual(metric(text, "drover_pipeline_records_in_total", pipeline="p"), sent)
            self.assertEqual(metric(text, "drover_pipeline_records_out_total", pipeline="p"), sent)
            totals = self.admin.http("GET", "/status")[1]["pipelines"]["default:p"]["totals"]
            self.assertEqual((totals["records_in"], totals["records_out"]), (sent, sent))

    def test_cached_status_follows_every_heartbeat(self):
        # GET /status over HTTP is served from each pipeline's cached text,
        # made again only when the pipeline was touched: a heartbeat that
        # did not touch would leave the counters and heartbeat times frozen.
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": 200}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=spec)[0], 200)

        def instance():
            pipes = self.admin.http("GET", "/status")[1]["pipelines"]
            insts = pipes.get("default:p", {}).get("instances", [])
            return insts[0] if insts and insts[0]["records_in"] > 0 else None
        first = wait_until(instance, 10, "a first heartbeat's counters in /status")
        seen = []
        wait_until(lambda: (lambda i: seen.append(i) or (i and i["records_in"] > first["records_in"] and
                                                         i["last_heartbeat_at"] != first["last_heartbeat_at"]))(
            instance()), 10, "later heartbeats in the cached /status")


class Events(EngineTest):
    def setUp(self):
        self.start_admin_engine(engine_extra="  limits: {stream_queue_bytes: 65536}\n")

    def stream(self, path, **kw):
        s = SSE(self.http_port, path, **kw)
        self.addCleanup(s.close)
        return s

    def test_events_arrive_in_order_filtered_by_topic_prefix(self):
        groups = self.stream("/api/v1/events?topics=group.&history=false")
        everything = self.stream("/api/v1/events?history=false")  # what happens from now on
        for s in (groups, everything):
            status, head = s.status()
            self.assertEqual(status, 200)
            self.assertIn("Content-Type: text/event-stream", head)
        wait_until(lambda: metric_plain(self.admin.http("GET", "/metrics")[1], "drover_sse_clients") == 2, 10,
                   "2 clients")
        for n in range(30):
            self.admin.zmq("PUT", f"/api/v1/groups/g{n}")
        self.admin.zmq("PUT", "/api/v1/groups/default/pipelines/p", body={"pipeline": {"nodes": {
            "in": {"type": "receiver:generator", "config": {"count": 1}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}})
        got = groups.events(30, topic="")
        self.assertEqual([e[1] for e in got], ["group.created"] * 30)
        self.assertEqual([e[2]["group"] for e in got], [f"g{n}" for n in range(30)])
        ids = [int(e[0]) for e in got]
        self.assertEqual(ids, sorted(ids))
        seen = everything.events(35, topic="")
        topics = [e[1] for e in seen]
        self.assertEqual(topics[:30], ["group.created"] * 30)
        self.assertIn("rollout.running", topics)
        self.assertIn("rollout.progress", topics)
        self.assertIsNone(groups.event(timeout=0.5), "no other topic reaches a group. client")
        # Over zmq one answer, the kept events (what comes next is on the events socket), filtered the same way.
        status, body = self.admin.zmq("GET", "/api/v1/events", query={"topics": "rollout."})
        self.assertEqual(status, 200)
        self.assertTrue(body["events"] and all(e["topic"].startswith("rollout.") for e in body["events"]), body)

    def test_a_new_client_gets_the_kept_events_and_a_reconnection_only_what_it_missed(self):
        """The console shows what happened before it was opened: the last 256
        events come first; EventSource's Last-Event-ID resumes after it."""
        for n in range(5):
            self.admin.zmq("PUT", f"/api/v1/groups/h{n}")
        first = self.stream("/api/v1/events?topics=group.")
        got = first.events(5, topic="group.")
        self.assertEqual([e[2]["group"] for e in got], [f"h{n}" for n in range(5)], "history, oldest first")
        self.assertIsNone(first.event(timeout=0.3), "each once")
        for n in range(5, 8):
            self.admin.zmq("PUT", f"/api/v1/groups/h{n}")
        live = first.events(3, topic="group.")
        self.assertEqual([e[2]["group"] for e in live], ["h5", "h6", "h7"])
        # A reconnection after h6: only h7 (and what came since).
        again = self.stream("/api/v1/events?topics=group.", headers={"Last-Event-ID": live[1][0]})
        resumed = again.events(1, topic="group.")
        self.assertEqual(resumed[0][2]["group"], "h7")
        self.assertIsNone(again.event(timeout=0.3))
        # history=false: nothing old.
        fresh = self.stream("/api/v1/events?topics=group.&history=false")
        self.assertEqual(fresh.status()[0], 200)
        self.assertIsNone(fresh.event(timeout=0.3))
        # Only the last 256 are kept.
        for n in range(300):
            self.admin.zmq("PUT", f"/api/v1/groups/x{n}")
        late = self.stream("/api/v1/events?topics=group.")
        kept = late.events(256, topic="group.")
        self.assertEqual(kept[-1][2]["group"], "x299")
        self.assertIsNone(late.event(timeout=0.3), "no more than 256")
        # A closed tab is no warning: clients leave all the time.
        before = metric_plain(self.admin.http("GET", "/metrics")[1], "drover_sse_clients")
        late.close()
        sent = iter(range(1000))

        def forgotten():  # each event tries the closed stream again, until it is found gone
            self.admin.zmq("PUT", f"/api/v1/groups/after-{next(sent)}")
            return metric_plain(self.admin.http("GET", "/metrics")[1], "drover_sse_clients") < before
        wait_until(forgotten, 10, "the closed stream forgotten", interval=0.05)
        self.assertNotIn("Failed to send", self.engine.log_text(), "said at debug level, not as a warning")

    def test_the_status_snapshot_follows_a_rollouts_end_at_once(self):
        """The console drew a finished rollout's old instances for up to a
        second (issue 35): the snapshot after rollout.succeeded is made in
        the same turn of droverd's loop, not at the next second."""
        import datetime

        def when(iso):
            return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
        feed = self.stream("/api/v1/events?topics=status,rollout.succeeded&history=false")
        self.assertEqual(feed.status()[0], 200)
        for rate in range(1, 6):
            spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
                "in": {"type": "receiver:generator", "config": {"rate": rate}, "to": ["out"]},
                "out": {"type": "exporter:null"}}}}
            self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/p", body=spec)[0], 200)
            ended = after = None
            while after is None:  # the stream up to the first snapshot after this rollout's end
                frame = feed.event(10)
                self.assertIsNotNone(frame, f"the stream went quiet after rollout {rate}")
                if frame[1] == "rollout.succeeded":
                    ended = frame[2]
                elif ended is not None:
                    after = frame[2]
            lag = when(after["generated_at"]) - when(ended["time"])
            self.assertLess(lag, 0.4, f"snapshot {lag:.3f} s after {ended['rollout_id']} ended")
            p = after["pipelines"]["default:p"]
            self.assertEqual(p["generation"], ended["target_generation"])
            self.assertEqual([i["generation"] for i in p["instances"] if i["state"] == "ready"],
                             [ended["target_generation"]])

    def test_a_client_that_does_not_read_loses_events_not_the_engine(self):
        slow = self.stream("/api/v1/events", rcvbuf=4096)
        fast = self.stream("/api/v1/events?topics=group.")
        self.assertEqual(slow.status()[0], 200)
        self.assertEqual(fast.status()[0], 200)
        wait_until(lambda: metric_plain(self.admin.http("GET", "/metrics")[1], "drover_sse_clients") == 2, 10,
                   "2 clients")
        # 60,000 events (a group created and deleted, 30,000 times: more than the kernel buffers on
        # loopback), requests pipelined on one socket.
        count = 30000
        collector = Collector(fast, 2 * count, timeout=60)
        sock = self.admin.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.admin.endpoint)
        self.addCleanup(sock.close)
        for start in range(0, count, 200):  # 400 requests in flight: within the sockets' high-water marks
            for n in range(start, start + 200):
                sock.send(msgpack.packb({"method": "PUT", "path": f"/api/v1/groups/g{n}"}))
                sock.send(msgpack.packb({"method": "DELETE", "path": f"/api/v1/groups/g{n}"}))
            for _ in range(400):
                self.assertTrue(sock.poll(10000), "the engine answers")
                sock.recv()
        got = collector.result()
        self.assertEqual([(e[1], e[2]["group"]) for e in got[:4]],
                         [("group.created", "g0"), ("group.deleted", "g0"), ("group.created", "g1"), ("group.deleted", "g1")])
        self.assertEqual([e[2]["group"] for e in got[::2]], [f"g{n}" for n in range(count)], "the fast client got all")
        text = self.admin.http("GET", "/metrics")[1]
        dropped = metric_plain(text, "drover_sse_events_dropped_total")
        self.assertGreater(dropped, 0, "the slow client's queue is bounded")
        self.assertEqual(self.admin.http("GET", "/livez")[0], 200)
        # When it reads at last: what was queued, a notice of how many it lost, then new events.
        names = []
        for k in range(50):
            self.admin.zmq("PUT", f"/api/v1/groups/after{k}")
            while True:
                e = slow.event(timeout=0.2)
                if e is None:
                    break
                names.append(e[1] if not e[1].startswith("group.") else e[2]["group"])
            if any(n.startswith("after") for n in names):
                break
        self.assertIn("dropped", names)
        self.assertTrue(names[-1].startswith("after"), names[-5:])
        self.assertLess(len([n for n in names if n.startswith("g")]), 2 * count)


def metric_plain(text, name):
    m = re.search(r"^%s (\S+)$" % name, text, re.M)
    return int(float(m.group(1))) if m else None


class OneLoop(EngineTest):
    """droverd is one loop: its admin HTTP (requests, waiting rollouts, event
    streams) runs on the loop's own thread. Every other thread it has is
    libzmq's (named ZMQbg/...)."""

    def assert_one_loop(self, when):
        self.assertEqual(foreign_threads(self.engine.pid), {}, f"{when}: threads besides the loop and libzmq's")

    def test_admin_http_streams_and_waits_run_on_the_loop_thread(self):
        self.start_admin_engine()
        self.assert_one_loop("idle")
        events = SSE(self.http_port, "/api/v1/events")
        self.addCleanup(events.close)
        self.assertEqual(events.status()[0], 200)
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:generator", "config": {"rate": 0, "count": 10}, "to": ["out"]},
            "out": {"type": "exporter:null"}}}}
        done = []
        waiter = threading.Thread(target=lambda: done.append(self.admin.http(
            "PUT", "/api/v1/groups/default/pipelines/p?wait=true", body=spec, timeout=20)[0]))
        waiter.start()
        # While the rollout waits and the stream is open, probes keep being answered.
        for _ in range(20):
            self.assertEqual(self.admin.http("GET", "/livez")[0], 200)
            self.assert_one_loop("serving")
        waiter.join(30)
        self.assertEqual(done, [200])
        self.assertIsNotNone(events.events(1, topic="rollout."))
        self.assert_one_loop("after a rollout")


if __name__ == "__main__":
    unittest.main()
