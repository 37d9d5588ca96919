"""What the hostile-input suites share (test_hostile.py, test_hostile_admin.py)."""

import os
import re
import socket

from harness import generator_spec, proc_status

TOKEN = "hostile-suite-token-0123456789"
# ASan's quarantine keeps freed memory: RSS says nothing about drover there.
SANITIZED = bool(os.environ.get("DROVER_TEST_SANITIZED"))


def rss_kb(pid):
    return int((proc_status(pid, "VmRSS") or "0 kB").split()[0])


def raw_http(port, request, timeout=5.0):
    """Sends request bytes as they are and returns (status, head+body bytes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data:
                head, _, body = data.partition(b"\r\n\r\n")
                m = re.search(rb"Content-Length: (\d+)", head, re.I)
                if m and len(body) >= int(m.group(1)):
                    break
    m = re.match(rb"HTTP/1\.\d (\d+)", data)
    return (int(m.group(1)) if m else None), data


gen_spec = generator_spec  # what every hostile suite builds on
