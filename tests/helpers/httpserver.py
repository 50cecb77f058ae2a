"""A local HTTP server for the download tests, with the failure modes the fetch code must survive."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Behaviour:
    """mode: ok | truncate | status | reset_once | stall.  `requests` records (method, Range header)."""

    def __init__(self, body: bytes, mode: str = "ok", status: int = 200, stall_s: float = 30.0):
        self.body, self.mode, self.status, self.stall_s = body, mode, status, stall_s
        self.requests: list[tuple[str, str | None]] = []
        self.resets = 0


def _handler(b: Behaviour):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_HEAD(self):
            b.requests.append(("HEAD", None))
            self.send_response(200 if b.mode != "status" else b.status)
            self.send_header("Content-Length", str(len(b.body)))
            self.end_headers()

        def do_GET(self):
            rng = self.headers.get("Range")
            b.requests.append(("GET", rng))
            if b.mode == "status":
                self.send_error(b.status)
                return
            start = int(rng.split("=")[1].split("-")[0]) if rng else 0
            payload = b.body[start:]
            self.send_response(206 if rng else 200)
            if rng:
                self.send_header("Content-Range", f"bytes {start}-{len(b.body) - 1}/{len(b.body)}")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if b.mode == "stall":
                self.wfile.write(payload[:100])
                self.wfile.flush()
                time.sleep(b.stall_s)
                return
            if b.mode == "truncate" or (b.mode == "reset_once" and b.resets == 0):
                half = len(payload) // 2
                self.wfile.write(payload[:half])
                self.wfile.flush()
                if b.mode == "reset_once":
                    b.resets += 1
                    time.sleep(0.5)  # let the client read the first half: a RST discards unread data
                    # RST instead of FIN: a connection reset by peer mid-stream.
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.connection.close()
                return
            self.wfile.write(payload)

    return Handler


@contextmanager
def serve(behaviour: Behaviour):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(behaviour))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/flower_photos.tgz"
    finally:
        server.shutdown()
        server.server_close()
