"""An HTTP receiver on 127.0.0.1 that keeps every POST (path, raw body): what a notification
target (json://, form://, xml://, ntfy://) sends."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer


class PostReceiver:
    def __init__(self) -> None:
        self.got: list[tuple[str, bytes]] = []
        got = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                got.append((self.path, self.rfile.read(int(self.headers.get("Content-Length") or 0))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
