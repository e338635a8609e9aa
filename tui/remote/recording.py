"""`--record FILE`: every agent session, as JSON lines, for replay (demos, screenshots, bug reports).

A `Recorder` owns the file; `RecordingTransport` wraps any Transport and tees each line the client
sends and each line the agent sends into it. One recording line per pipe line:

    {"t": 1.234, "host": "local", "conn": 2, "dir": "send", "msg": {...}}   # client -> agent
    {"t": 1.240, "host": "local", "conn": 2, "dir": "recv", "msg": {...}}   # agent -> client
    {"t": 0.001, "host": "local", "conn": 2, "event": "open"}               # also "close", "error"

`t` is seconds since the recorder started (one timeline for every host and connection); a line
that is not JSON (a remote .bashrc's chatter) is kept as `"raw"` text. The first line is a header.
Secrets: every `env` mapping (a launch spec's) has its values replaced by "***" before it is written.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import IO, Any

from .transport import Transport

FORMAT = "gpudeck-recording"
VERSION = 1
REDACTED = "***"


def redact(obj: Any) -> Any:
    """A copy of obj with the values of every `env` mapping replaced: a recording is shared (bug
    reports), and a launch spec's env is where tokens and passwords travel."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if k == "env" and isinstance(v, dict):
                out[k] = dict.fromkeys(v, REDACTED)
            elif k == "data_urls":  # presigned URLs: bearer tokens until they expire
                out[k] = REDACTED
            elif k == "notify" and isinstance(v, dict) and isinstance(v.get("urls"), list):
                out[k] = dict(v, urls=[REDACTED for _ in v["urls"]])  # webhook URLs hold tokens
            else:
                out[k] = redact(v)
        return out
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj


class Recorder:
    """The recording file. Thread-safe: each transport's reader thread and every worker that writes
    a request call `line()` concurrently; one lock keeps each JSON line whole and `t` ordered."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # Owner-only: output tails and host facts are in it, even with env values redacted.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # O_CREAT's mode leaves an existing file's (say 0644) as it was
        self._file: IO[str] | None = os.fdopen(fd, "w", encoding="utf-8")
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._conns = 0
        self._write({"format": FORMAT, "version": VERSION, "created_at": time.time()})

    def new_conn(self) -> int:
        with self._lock:
            self._conns += 1
            return self._conns

    def line(self, host: str, conn: int, direction: str, data: bytes) -> None:
        text = data.decode("utf-8", "replace").rstrip("\n")
        try:
            msg: Any = json.loads(text)
        except ValueError:
            msg = None
        entry: dict[str, Any] = {"host": host, "conn": conn, "dir": direction}
        if isinstance(msg, dict):
            entry["msg"] = redact(msg)
        else:
            entry["raw"] = text
        self._stamp(entry)

    def event(self, host: str, conn: int, event: str, detail: str | None = None) -> None:
        entry: dict[str, Any] = {"host": host, "conn": conn, "event": event}
        if detail:
            entry["detail"] = detail
        self._stamp(entry)

    def _stamp(self, entry: dict[str, Any]) -> None:
        with self._lock:
            entry = {"t": round(time.monotonic() - self._start, 4), **entry}
            self._write(entry)

    def _write(self, entry: dict[str, Any]) -> None:
        if self._file is None:
            return  # closed: late lines from a reader thread winding down are dropped
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self._file.flush()  # a crash (the bug being reported) must still leave a usable file

    def wrap(self, transport: Transport) -> RecordingTransport:
        return RecordingTransport(transport, self)

    def close(self) -> None:
        with self._lock:
            f, self._file = self._file, None
        if f is not None:
            f.close()


class RecordingTransport(Transport):
    """A transport that tees every line through a Recorder; otherwise it is the transport it wraps."""

    def __init__(self, inner: Transport, recorder: Recorder) -> None:
        self.inner = inner
        self.host = inner.host
        self.recorder = recorder
        self.conn = recorder.new_conn()

    def open(self) -> None:
        try:
            self.inner.open()
        except Exception as exc:
            self.recorder.event(self.host, self.conn, "error", str(exc) or type(exc).__name__)
            raise
        self.recorder.event(self.host, self.conn, "open")

    def readline(self) -> bytes:
        line = self.inner.readline()
        if line:
            self.recorder.line(self.host, self.conn, "recv", line)
        return line

    def write(self, data: bytes) -> None:
        for piece in data.splitlines():  # the client writes one line per call; be safe anyway
            self.recorder.line(self.host, self.conn, "send", piece)
        self.inner.write(data)

    def close(self) -> None:
        self.inner.close()
        self.recorder.event(self.host, self.conn, "close")
