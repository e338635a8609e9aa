"""An HTTP relay on 127.0.0.1 in front of a real endpoint (the moto server) that answers the next
requests of an action with a fault first: EC2 throttling, a 503, or the request done upstream and
its answer lost (the connection drops, or the answer comes after the client gave up)."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# EC2's error shape (query protocol): https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
EC2_ERROR = (
    '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>{code}</Code>'
    "<Message>{message}</Message></Error></Errors><RequestID>f00d</RequestID></Response>"
)


@dataclass
class Relay:
    upstream: str
    faults: list[tuple[str, str]] = field(default_factory=list)  # (Action, "throttle"|"503"|"lost"|"stall")
    stall_s: float = 1.5
    actions: list[str] = field(default_factory=list)  # every Action seen, faults included
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""


def _handler(relay: Relay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            action = (parse_qs(body.decode(errors="replace")).get("Action") or [""])[0]
            with relay.lock:
                relay.actions.append(action)
                fault = next((f for f in relay.faults if f[0] == action), None)
                if fault:
                    relay.faults.remove(fault)
            kind = fault[1] if fault else None
            if kind == "throttle":
                return self._send(
                    400,
                    EC2_ERROR.format(code="RequestLimitExceeded", message="Request limit exceeded.").encode(),
                    {},
                )
            if kind == "503":
                return self._send(
                    503,
                    EC2_ERROR.format(code="Unavailable", message="The server is overloaded.").encode(),
                    {},
                )
            status, data, headers = self._forward(body)
            if kind == "lost":
                self.close_connection = True
                return
            if kind == "stall":
                time.sleep(relay.stall_s)
            self._send(status, data, headers)

        def _forward(self, body: bytes) -> tuple[int, bytes, dict[str, str]]:
            parts = urlsplit(relay.upstream)
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            conn.request("POST", self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            keep = {k: v for k, v in resp.getheaders() if k.lower() in ("content-type", "x-amzn-requestid")}
            conn.close()
            return resp.status, data, keep

        def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def relay_to(upstream: str) -> Iterator[Relay]:
    relay = Relay(upstream)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(relay))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    relay.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield relay
    finally:
        server.shutdown()
        server.server_close()
