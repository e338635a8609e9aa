"""A fake instance metadata service on 127.0.0.1 for the preemption notice tests and bench: AWS's
IMDSv2 (PUT /latest/api/token, then GET /latest/meta-data/spot/instance-action with the token) and
Aliyun's GET /latest/meta-data/instance/spot/termination-time. No notice (404) until the test calls
`serve_notice`; `mode` makes it misbehave (token refused, garbage, a 500) to show nothing breaks."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

TOKEN = "fake-imds-token-1"


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeMetadata:
    def __init__(self) -> None:
        self.notice_at: float | None = None  # the epoch time the "host goes"; None: no notice
        self.served_at: float | None = None  # when the notice was first served (epoch)
        self.mode = "ok"  # ok | no-token | garbage | error
        self.requests: list[tuple[str, str]] = []  # (method, path), every request
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def serve_notice(self, seconds: float = 120.0) -> float:
        """From now on the notice is out, the host going `seconds` from now; its epoch time."""
        with self.lock:
            self.notice_at = int(time.time() + seconds)
        return self.notice_at

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, status: int, body: str = "") -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self) -> None:
                fake.requests.append(("PUT", self.path))
                if self.path != "/latest/api/token" or not self.headers.get(
                    "X-aws-ec2-metadata-token-ttl-seconds"
                ):
                    return self._answer(400)
                if fake.mode == "no-token":
                    return self._answer(403)
                self._answer(200, TOKEN)

            def do_GET(self) -> None:
                fake.requests.append(("GET", self.path))
                with fake.lock:
                    at = fake.notice_at
                    if at is not None and fake.served_at is None and fake.mode == "ok":
                        fake.served_at = time.time()
                if fake.mode == "error":
                    return self._answer(500, "oops")
                if self.path == "/latest/meta-data/spot/instance-action":
                    if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
                        return self._answer(401)
                    if fake.mode == "garbage":
                        return self._answer(200, "<html>not json")
                    if at is None:
                        return self._answer(404)
                    return self._answer(200, json.dumps({"action": "terminate", "time": iso(at)}))
                if self.path == "/latest/meta-data/instance/spot/termination-time":
                    if fake.mode == "garbage":
                        return self._answer(200, "soon-ish")
                    if at is None:
                        return self._answer(404)
                    return self._answer(200, iso(at))
                self._answer(404)

        return Handler


@contextmanager
def fake_metadata() -> Iterator[FakeMetadata]:
    fake = FakeMetadata()
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
