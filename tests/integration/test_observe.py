"""What operators watch, through the real binaries: pipeline totals that a
replace or a crash never takes back (/metrics and /status), per-node
counters in /status."""

import os
import re
import signal
import unittest

from harness import EngineTest, wait_until


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


if __name__ == "__main__":
    unittest.main()
