"""/metrics over the standard library's http.server, served from a worker thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from .exposition import CONTENT_TYPE


def metrics_server(host: str, port: int, body: Callable[[], str]) -> ThreadingHTTPServer:
    """A server answering GET /metrics with `body()` (404 elsewhere); the caller starts it with
    `start()` and stops it with `shutdown()`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404, "only /metrics here")
                return
            try:
                data = body().encode()
            except Exception as exc:  # a scrape that fails says why, and the server serves on
                self.send_error(500, f"gathering failed: {exc}")
                return
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # one line per scrape every second would drown what matters

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def start(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return thread
