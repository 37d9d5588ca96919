"""exporter:file's rotate (issue 49, docs/operations.md "Writing files"):
two instances on two cores append to one path, and a replace runs two
generations on it, while curl posts 24,000 records: the file is set aside
every 64 KiB, every record is in exactly one file, whole, and no file set
aside is much over max_bytes; with max_files 2 and compress, at most two
files are kept, each a gzip of whole lines."""

import glob
import gzip
import json
import os
import re
import threading
import unittest

from harness import Admin, EngineTest, curl_post, engine_yaml, free_port, wait_until

PIPE = "/api/v1/groups/default/pipelines/files"


class FileRotation(EngineTest):
    def start(self, rotate):
        self.http_port, self.in_port = free_port(), free_port()
        pipelines = f"""
      files:
        cores: {{count: 2}}
        nodes:
          in: {{type: receiver:http, config: {{endpoint: "127.0.0.1:{self.in_port}"}}, to: [out]}}
          out: {{type: exporter:file, config: {{path: "{{OUT}}/out.ndjson", rotate: {json.dumps(rotate)}}}}}
"""
        engine = self.start_engine(engine_yaml(pipelines).replace("HTTP", str(self.http_port)))
        self.admin = Admin(engine, self.http_port)
        self.admin.wait_ready(20)
        self.path = os.path.join(engine.out_dir, "out.ndjson")
        return engine

    def post(self, first, count, per=100):
        for at in range(first, first + count, per):
            body = "".join(json.dumps({"i": i, "pad": "x" * 40}) + "\n" for i in range(at, at + per))
            status, _, _, _ = curl_post(self.in_port, "/", body.encode(), "application/x-ndjson")
            self.assertEqual(status, 200)

    def aside(self):
        return sorted(p for p in glob.glob(self.path + ".*") if re.search(r"\.\d{8}T\d{6}\.\d{3}(-\d+)?(\.gz)?$", p))

    @staticmethod
    def lines(path):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            return f.read().splitlines()

    def test_two_instances_and_two_generations_rotate_one_path_and_keep_every_record_once(self):
        self.start({"max_bytes": 65536, "max_files": 1000})
        self.post(0, 12000)
        #  A replace while records flow: the old and the new generation
        #  append to (and rotate) the same path for a while.
        spec = self.admin.http("GET", PIPE)[1]["spec"]
        spec["nodes"]["in"]["config"]["max_body_bytes"] = 4194303  # a change: a rolling replace
        poster = threading.Thread(target=self.post, args=(12000, 12000))
        poster.start()
        status, body, _ = self.admin.http("PUT", PIPE, body={"pipeline": spec}, timeout=60)
        poster.join()
        self.assertEqual((status, body.get("action")), (200, "replace"), body)

        def all_lines():
            rows = []
            for p in self.aside() + [self.path]:
                rows += self.lines(p)
            return rows if len(rows) >= 24000 else None

        rows = wait_until(all_lines, 30, "24,000 records in the files")
        ids = [json.loads(line)["i"] for line in rows]  # every line whole JSON
        self.assertEqual(sorted(ids), list(range(24000)), "every record in exactly one file")
        aside = self.aside()
        self.assertGreaterEqual(len(aside), 15, "about 1.5 MB in 64 KiB files")
        longest = max(len(line) + 1 for line in rows)  # a record's line (with its observed time)
        for p in aside:
            #  Set aside between two batches: at most a batch (100 records)
            #  of each instance past max_bytes.
            self.assertLess(os.path.getsize(p), 65536 + 2 * 100 * longest, p)
        self.assertRegex(self.engine.log_text(), r"file rotated path=.*out\.ndjson aside=")

    def test_max_files_and_compress_keep_two_gzipped_files(self):
        self.start({"max_bytes": 16384, "max_files": 2, "compress": True})
        self.post(0, 6000)
        wait_until(lambda: len(self.engine.log_text().split("file rotated")) > 10, 30, "ten rotations")
        kept = wait_until(lambda: (lambda a: a if len(a) == 2 and all(p.endswith(".gz") for p in a) else None)(
            self.aside()), 30, "two files set aside, both gzipped")
        for p in kept:
            rows = self.lines(p)
            self.assertTrue(rows)
            self.assertTrue(all(json.loads(line)["pad"] for line in rows), "whole lines")
        self.assertEqual(glob.glob(self.path + ".*.tmp"), [], "no compression left half done")

    def test_compressed_while_two_instances_write_nothing_is_lost(self):
        self.start({"max_bytes": 16384, "max_files": 1000, "compress": True})
        #  A file set aside that an instance ended before compressing: the
        #  next rotation compresses it.
        with open(self.path + ".20200101T000000.000", "w") as f:
            f.write("".join(json.dumps({"i": i, "pad": "old"}) + "\n" for i in range(100000, 100010)))
        self.post(0, 12000, per=50)

        def all_lines():
            aside = self.aside()
            if glob.glob(self.path + ".*.tmp") or any(p.endswith(".gz") is False for p in aside):
                return None  # compressions under way
            rows = []
            for p in aside + [self.path]:
                rows += self.lines(p)
            return rows if len(rows) >= 12010 else None

        rows = wait_until(all_lines, 30, "12,000 records in the files, every one set aside gzipped")
        self.assertEqual(sorted(json.loads(line)["i"] for line in rows), list(range(12000)) + list(range(100000, 100010)))
        self.assertTrue(os.path.exists(self.path + ".20200101T000000.000.gz"))
        left = set(os.listdir(os.path.dirname(self.path))) - {os.path.basename(p) for p in self.aside()}
        self.assertEqual(left, {"out.ndjson"}, "nothing but the file and those set aside, all gzipped")

    def test_a_rotate_without_max_bytes_is_refused(self):
        self.http_port = free_port()
        self.start_engine(engine_yaml().replace("HTTP", str(self.http_port)))
        admin = Admin(self.engine, self.http_port)
        admin.wait_ready(20)
        body = {"pipeline": {"nodes": {"in": {"type": "receiver:generator", "to": ["out"]},
                                       "out": {"type": "exporter:file",
                                               "config": {"path": "/tmp/x.ndjson", "rotate": {"max_files": 3}}}}}}
        status, answer, _ = admin.http("PUT", PIPE, body=body)
        self.assertEqual(status, 422, answer)
        self.assertIn("config.rotate: must be a map with max_bytes", json.dumps(answer))
        body["pipeline"]["nodes"]["out"]["config"]["rotate"] = {"max_bytes": 100}
        status, answer, _ = admin.http("PUT", PIPE, body=body)
        self.assertEqual(status, 422, answer)
        self.assertIn("config.rotate.max_bytes: must be an integer of at least 4096", json.dumps(answer))


if __name__ == "__main__":
    unittest.main()
