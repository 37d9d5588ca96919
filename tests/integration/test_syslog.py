"""receiver:syslog through the real binaries, fed by util-linux logger: both
formats arrive as records; the UDP socket is droverd's and outlives every
instance, so a replace under load loses no datagram; a port another process
holds fails the create with the errno; a TCP frame past max_message_bytes
closes its connection (never split, never merged), the next connection is
fine; syslog records sent on as OTLP carry their time and severity."""

import os
import signal
import socket
import subprocess
import threading
import time
import unittest

from harness import Admin, Engine, EngineTest, children_of, cmdline, engine_yaml, free_port, read_ndjson, wait_until


udp_port = free_port  # free for UDP as well


def logger(port, *args):
    subprocess.run(["logger", "-d", "-n", "127.0.0.1", "-P", str(port), *args], check=True)


class Syslog(EngineTest):
    def setUp(self):
        self.http_port = free_port()
        self.engine = self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)), env={"DROVER_LOG": "debug"})
        self.admin = Admin(self.engine, self.http_port)
        self.admin.wait_ready()
        self.out = self.engine.out_dir

    def spec(self, port, tag="v1", cores=1, proto="udp"):
        return {"pipeline": {"cores": {"count": cores}, "nodes": {
            "in": {"type": "receiver:syslog", "config": {"endpoint": f"{proto}://127.0.0.1:{port}"}, "to": ["t"]},
            "t": {"type": "processor:transform", "config": {"set": {"tag": tag}}, "to": ["out"]},
            "out": {"type": "exporter:file", "config": {"path": f"{self.out}/syslog-{{core}}-{{generation}}.ndjson"}}}}}

    def records(self):
        import glob
        rows = []
        for path in sorted(glob.glob(f"{self.out}/syslog-*.ndjson")):
            rows += read_ndjson(path)
        return rows

    @unittest.skipUnless(subprocess.run(["which", "logger"], capture_output=True).returncode == 0, "no logger")
    def test_logger_in_both_formats_becomes_records(self):
        port = udp_port()
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=self.spec(port))
        self.assertEqual(status, 200, body)
        before = time.time_ns()
        logger(port, "--rfc5424", "-t", "app5424", "-p", "local3.warning", "--id=42", "--msgid", "ID7",
               "--sd-id", "zoo@123", "--sd-param", 'tiger="hungry"', "five four two four")
        logger(port, "--rfc3164", "-t", "app3164", "-p", "auth.info", "three one six four")
        rows = wait_until(lambda: (lambda r: r if len(r) == 2 else None)(self.records()), 10, "two records")
        after = time.time_ns()
        #  When drover took each: observed_time_unix_nano.
        self.assertTrue(all(before <= r["observed_time_unix_nano"] <= after for r in rows), rows)
        by_app = {r["app_name"]: r for r in rows}
        r = by_app["app5424"]
        self.assertEqual((r["format"], r["facility"], r["severity"], r["procid"], r["msgid"], r["message"]),
                         ("rfc5424", 19, 4, "42", "ID7", "five four two four"))
        self.assertEqual(r["structured_data"]["zoo@123"], {"tiger": "hungry"})
        self.assertEqual(r["tag"], "v1")
        r = by_app["app3164"]
        self.assertEqual((r["format"], r["facility"], r["severity"], r["message"]), ("rfc3164", 4, 6, "three one six four"))
        # Junk is a record too, format raw, whole.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"not syslog \xff at all", ("127.0.0.1", port))
        raw = wait_until(lambda: [r for r in self.records() if r["format"] == "raw"], 10, "the raw record")
        self.assertEqual(raw[0]["message"], "not syslog \ufffd at all")

    @unittest.skipUnless(subprocess.run(["which", "logger"], capture_output=True).returncode == 0, "no logger")
    def test_tcp_in_both_framings(self):
        port = free_port()
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys",
                                          body=self.spec(port, proto="tcp"))
        self.assertEqual(status, 200, body)
        base = ["logger", "-T", "-n", "127.0.0.1", "-P", str(port)]
        subprocess.run(base + ["--rfc5424", "-t", "lf5424", "line framed"], check=True)
        subprocess.run(base + ["--octet-count", "--rfc5424", "-t", "oc5424", "octet counted"], check=True)
        subprocess.run(base + ["--octet-count", "--rfc3164", "-t", "oc3164", "octet counted too"], check=True)
        # Several messages on one connection, in both framings, split across writes.
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"<13>1 - h many - - - one\n<13>1 - h many - - - tw")
            c.sendall(b"o\r\n<13>1 - h many - - - three\n")
        with socket.create_connection(("127.0.0.1", port)) as c:
            for text in (b"<13>1 - h counted - - - a\nb", b"<13>1 - h counted - - - c"):
                c.sendall(b"%d %s" % (len(text), text))
        rows = wait_until(lambda: (lambda r: r if len(r) >= 8 else None)(self.records()), 10, "eight records")
        by_app = {}
        for r in rows:
            by_app.setdefault(r["app_name"], []).append(r["message"])
        self.assertEqual(by_app["lf5424"], ["line framed"])
        self.assertEqual(by_app["oc5424"], ["octet counted"])
        self.assertEqual(by_app["oc3164"], ["octet counted too"])
        self.assertEqual(by_app["many"], ["one", "two", "three"])
        self.assertEqual(by_app["counted"], ["a\nb", "c"])

    def test_tcp_through_replaces_loses_no_message_of_a_closed_connection(self):
        port = free_port()
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys",
                                         body=self.spec(port, cores=2, proto="tcp"))[0], 200)
        sent = 0

        def burst(n=20):
            nonlocal sent
            with socket.create_connection(("127.0.0.1", port)) as c:
                c.sendall(b"".join(b"<13>1 - h tcp - - - seq=%d\n" % (sent + i) for i in range(n)))
            sent += n
            time.sleep(0.002)  # a steady sender (pacing, not synchronisation): the count stays bounded
        # A sender that keeps its connection: the drain closes it at a
        # message boundary once it has read all it was sent.
        keeper = socket.create_connection(("127.0.0.1", port))
        keeper.sendall(b"<13>1 - h kept - - - before\n")
        for change in range(3):
            result = {}
            put = threading.Thread(target=lambda: result.update(zip(("status", "body"), self.admin.http(
                "PUT", "/api/v1/groups/default/pipelines/sys", body=self.spec(port, tag=f"v{change + 2}", cores=2,
                                                                              proto="tcp"), timeout=60)[:2])))
            put.start()
            while put.is_alive():
                burst()
            put.join()
            self.assertEqual(result["status"], 200, result)
        burst()
        keeper.settimeout(10)
        self.assertEqual(keeper.recv(1), b"", "the draining instance closed the kept connection")
        keeper.close()
        seqs = wait_until(lambda: (lambda r: r if len(r) >= sent else None)(
            [int(x["message"].split("=")[1]) for x in self.records() if x["app_name"] == "tcp"]), 20, f"all {sent}")
        self.assertEqual(sorted(seqs), list(range(sent)), "every message once")
        self.assertEqual([x["message"] for x in self.records() if x["app_name"] == "kept"], ["before"])
        print(f"syslog over tcp: {sent} messages on short connections through 3 replaces, none lost", flush=True)

    def test_a_tcp_frame_past_max_message_bytes_closes_its_connection_only(self):
        port = free_port()
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys",
                                         body=self.spec(port, proto="tcp"))[0], 200)
        limit = 65536

        def closed_by_drover(conn):
            conn.settimeout(10)
            try:
                return conn.recv(1) == b""
            except ConnectionResetError:
                return True

        def frame(body):
            return b"%d %s" % (len(body), body)
        # Exactly the limit is taken; one byte more closes the connection, and
        # the frame after it on that connection is never read.
        whole = b"<13>1 - h big - - - " + b"x" * (limit - 20)
        self.assertEqual(len(whole), limit)
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(frame(b"<13>1 - h big - - - first") + frame(whole) + frame(whole + b"y") +
                      frame(b"<13>1 - h big - - - after"))
            self.assertTrue(closed_by_drover(c))
        # A line past the limit, without its LF: the same.
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"<13>1 - h line - - - short\n" + b"z" * (limit + 1))
            self.assertTrue(closed_by_drover(c))
        # The next connection is fine.
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(frame(b"<13>1 - h next - - - fine"))
        rows = wait_until(lambda: (lambda r: r if any(x["app_name"] == "next" for x in r) else None)(self.records()),
                          10, "the next connection's message")
        got = [(x["app_name"], len(x["message"])) for x in rows]
        self.assertEqual(sorted(got), sorted([("big", 5), ("big", limit - 20), ("line", 5), ("next", 4)]),
                         "nothing split, nothing merged, nothing after a refused frame")
        log = self.engine.log_text()
        self.assertIn("a frame of 65537 bytes is longer than max_message_bytes (65536): refused, the connection is "
                      "closed", log)
        self.assertIn("a line of more than 65536 bytes is longer than max_message_bytes (65536)", log)
        wait_until(lambda: self.admin.http("GET", "/api/v1/groups/default/pipelines/sys/status")[1]["instances"][0]
                   ["nodes"].get("in", {}).get("errors") == 2, 10, "both refusals counted as errors")

    def test_max_message_bytes_is_checked(self):
        spec = self.spec(free_port(), proto="tcp")
        spec["pipeline"]["nodes"]["in"]["config"]["max_message_bytes"] = 0
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=spec)
        self.assertEqual(status, 422, body)
        self.assertIn("config.max_message_bytes: must be at least 1", str(body))
        spec["pipeline"]["nodes"]["in"]["config"]["max_message_bytes"] = 2 ** 20 + 1
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=spec)
        self.assertEqual(status, 422, body)

    def test_syslog_records_sent_as_otlp_carry_time_and_severity(self):
        from capture import Capture
        capture = Capture()
        self.addCleanup(capture.close)
        port = udp_port()
        spec = {"pipeline": {"cores": {"count": 1}, "nodes": {
            "in": {"type": "receiver:syslog", "config": {"endpoint": f"udp://127.0.0.1:{port}"}, "to": ["out"]},
            "out": {"type": "exporter:otlp", "config": {"endpoint": capture.url(), "encoding": "json",
                                                        "batch": {"max_delay_ms": 10}}}}}}
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=spec)[0], 200)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"<28>1 2026-11-24T10:00:00.5+01:00 host app 1 - - hello otlp", ("127.0.0.1", port))
        before = time.time()
        if subprocess.run(["which", "logger"], capture_output=True).returncode == 0:
            logger(port, "--rfc3164", "-t", "app3164", "-p", "auth.crit", "from logger")

        def logs():
            import json as j
            out = []
            for body in capture.bodies():
                for rl in j.loads(body)["resourceLogs"]:
                    for sl in rl["scopeLogs"]:
                        out += sl["logRecords"]
            return out
        records = wait_until(lambda: (lambda r: r if len(r) >= 2 else None)(logs()), 10, "both as OTLP")
        by_body = {r["body"]["stringValue"]: r for r in records}
        r = by_body["hello otlp"]
        self.assertEqual(r["timeUnixNano"], str(1795510800 * 10 ** 9 + 5 * 10 ** 8))  # 09:00:00.5Z
        self.assertEqual((r["severityNumber"], r["severityText"]), (13, "warning"))
        r = by_body["from logger"]
        self.assertEqual((r["severityNumber"], r["severityText"]), (18, "crit"))
        self.assertLess(abs(int(r["timeUnixNano"]) / 1e9 - before), 120, "an RFC 3164 time, this year")

    def test_replaces_and_a_resize_under_load_lose_no_datagram(self):
        port = udp_port()
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys",
                                         body=self.spec(port, cores=2))[0], 200)
        sent = 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            def send(n):
                nonlocal sent
                for _ in range(n):
                    s.sendto(f"<13>1 - h load - - - seq={sent}".encode(), ("127.0.0.1", port))
                    sent += 1
                    if sent % 50 == 0:
                        time.sleep(0.005)  # a steady producer, not a flood: loopback UDP drops floods
            send(500)
            # Three replaces, the last one by exec, then a resize to one core
            # (generation 4 stays; core 1 drains): each while datagrams come.
            for change in range(4):
                if change == 2:
                    # Generation 4 starts by exec, not from the zygote: the
                    # socket is inherited over exec then, not passed.
                    zygote = next(c for c in children_of(self.engine.pid) if cmdline(c) == "drover-zygote")
                    os.kill(zygote, signal.SIGKILL)
                    self.engine.wait_log(r"zygote exited")
                result = {}
                spec = self.spec(port, tag=f"v{min(change, 2) + 2}", cores=2 if change < 3 else 1)
                put = threading.Thread(target=lambda: result.update(zip(("status", "body"), self.admin.http(
                    "PUT", "/api/v1/groups/default/pipelines/sys", body=spec, timeout=60)[:2])))
                put.start()
                while put.is_alive():
                    send(50)
                put.join()
                self.assertEqual(result["status"], 200, result)
                self.assertEqual(result["body"]["action"], "replace" if change < 3 else "resize")
            send(200)
        seqs = wait_until(lambda: (lambda r: r if len(r) >= sent else None)(
            [int(x["message"].split("=")[1]) for x in self.records()]), 20, f"all {sent} datagrams")
        self.assertEqual(sorted(seqs), list(range(sent)), "every datagram once")
        print(f"syslog under load: {sent} datagrams, 3 replaces and a resize, none lost", flush=True)
        tags = {x["tag"] for x in self.records()}
        self.assertEqual(tags, {"v1", "v2", "v3", "v4"})
        status, st, _ = self.admin.http("GET", "/api/v1/groups/default/pipelines/sys/status")
        self.assertEqual((st["generation"], st["phase"], st["desired_cores"]), (4, "running", [0]))
        self.assertRegex(self.engine.log_text(), r"instance by exec instance=default/sys@4#")

    def test_a_port_another_process_holds_fails_the_create_with_the_errno(self):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as held:
            # Even one that allows reuse: were droverd to allow it too, Linux
            # would let both bind, and one would quietly take the datagrams.
            held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            held.bind(("127.0.0.1", 0))
            port = held.getsockname()[1]
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=self.spec(port))
            self.assertEqual(status, 409, body)
            self.assertIn(f"udp://127.0.0.1:{port}: bind: Address already in use",
                          body["rollout"]["failure_reason"])
            self.assertEqual(self.engine.instances(), {}, "nothing started")
        # Once it is free the same PUT works, and a shutdown gives the port back.
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=self.spec(port))[0], 200)
        self.assertEqual(self.admin.http("POST", "/api/v1/groups/default/pipelines/sys/shutdown")[0], 200)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
            again.bind(("127.0.0.1", port))  # free again: droverd closed it

    def test_a_config_pipeline_whose_port_is_held_fails_and_says_why(self):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as held:
            held.bind(("127.0.0.1", 0))
            port = held.getsockname()[1]
            http = free_port()
            engine = Engine(engine_yaml(pipelines=f"""
      sys:
        nodes:
          in: {{ type: receiver:syslog, config: {{ endpoint: "udp://127.0.0.1:{port}" }}, to: [out] }}
          out: {{ type: exporter:null }}
""").replace("HTTP", str(http)), name="held").start()
            self.addCleanup(engine.cleanup)
            admin = Admin(engine, http)
            admin.wait_ready()
            st = wait_until(lambda: (lambda s: s if s.get("phase") == "failed" else None)(
                admin.http("GET", "/api/v1/groups/default/pipelines/sys/status")[1]), 10, "phase failed")
            self.assertIn("bind: Address already in use", st["rollout"]["failure_reason"])
            self.assertEqual(engine.instances(), {}, "nothing started")
            self.assertEqual(admin.http("GET", "/livez")[0], 200, "droverd itself serves on")

    def test_an_endpoint_is_one_pipelines_and_one_nodes(self):
        port = udp_port()
        self.assertEqual(self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=self.spec(port))[0], 200)
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/other", body=self.spec(port))
        self.assertEqual(status, 422, body)
        self.assertEqual(body["error"]["details"][0]["path"], "nodes.in.config.endpoint")
        self.assertIn("already bound by pipeline default:sys", body["error"]["details"][0]["message"])
        twice = self.spec(udp_port())
        twice["pipeline"]["nodes"]["in2"] = dict(twice["pipeline"]["nodes"]["in"])
        status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/twice", body=twice)
        self.assertEqual(status, 422, body)
        self.assertIn("is node in's already", body["error"]["details"][0]["message"])

    def test_a_bad_endpoint_is_refused_with_its_path(self):
        for endpoint, words in (("127.0.0.1:514", "udp://host:port or tcp://host:port"), ("udp://127.0.0.1", "host and a port"),
                                ("udp://127.0.0.1:70000", "port must be 1 to 65535"), ("syslog://x:1", "udp://host:port")):
            spec = self.spec(1)
            spec["pipeline"]["nodes"]["in"]["config"]["endpoint"] = endpoint
            status, body, _ = self.admin.http("PUT", "/api/v1/groups/default/pipelines/sys", body=spec)
            self.assertEqual(status, 422, body)
            detail = body["error"]["details"][0]
            self.assertEqual(detail["path"], "nodes.in", detail)
            self.assertIn(words, detail["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
