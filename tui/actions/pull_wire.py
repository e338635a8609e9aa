"""Reads a `send` answer (remote_agent/transfer/frames.py) into the local tree, entry by entry.

The stream is read in large pieces through a buffer of our own (a line read byte by byte from an
SSH channel costs a lock per byte). Every entry is checked before it is used: a name outside the
pull, an unknown entry or frame, a frame larger than a chunk ends the pull with one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from remote_agent.transfer.frames import CHUNK, END, FAILED, FRAME, MAX_LINE, parse_line, unpack

from ..errors import GpudeckError
from .agents import ByteStream
from .pull_local import LocalTree, safe_rel

Progress = Callable[[int, int], None]  # (files done, file bytes done) as they come


class Reader:
    def __init__(self, stream: ByteStream, why: Callable[[], str]) -> None:
        self.stream, self.why = stream, why
        self.buf = bytearray()
        self.wire = 0  # bytes read from the stream

    def _fill(self) -> bool:
        data = self.stream.read(1 << 20)
        self.wire += len(data)
        self.buf += data
        return bool(data)

    def line(self) -> dict[str, Any]:
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                raw = bytes(self.buf[: end + 1])
                del self.buf[: end + 1]
                obj = parse_line(raw)
                if obj is None:
                    raise GpudeckError(f"the agent's answer is not a JSON line: {raw[:80]!r}")
                return obj
            if len(self.buf) > MAX_LINE or not self._fill():
                raise GpudeckError(f"the agent's answer broke off{self.why()}")

    def exactly(self, size: int) -> bytes:
        while len(self.buf) < size:
            if not self._fill():
                raise GpudeckError(f"the agent's answer broke off inside a file{self.why()}")
        out = bytes(self.buf[:size])
        del self.buf[:size]
        return out


@dataclass
class Received:
    copied: list[tuple[bytes, int]] = field(default_factory=list)  # (name, size) of each file written
    links: list[bytes] = field(default_factory=list)
    dirs: list[bytes] = field(default_factory=list)
    skipped: list[tuple[bytes, str]] = field(default_factory=list)  # (name, why) not copied
    bytes: int = 0
    end: dict[str, Any] = field(default_factory=dict)


def receive(reader: Reader, tree: LocalTree, progress: Progress) -> Received:
    got = Received()
    while True:
        entry = reader.line()
        kind = entry.get("t")
        if kind == "end":
            got.end = entry
            return got
        rel = safe_rel(entry.get("p"))
        if kind == "d":
            tree.directory(rel, _int(entry.get("mode"), 0o700))
            got.dirs.append(rel)
        elif kind == "l":
            tree.link(rel, safe_target(entry.get("target")))
            got.links.append(rel)
        elif kind == "skip":
            got.skipped.append((rel, str(entry.get("why"))[:300]))
        elif kind == "f":
            _file(reader, tree, rel, entry, got, progress)
        else:
            raise GpudeckError(f"the agent sent an entry of unknown kind {kind!r}")


def _file(
    reader: Reader, tree: LocalTree, rel: bytes, entry: dict[str, Any], got: Received, progress: Progress
) -> None:
    sink = tree.open_file(rel, _int(entry.get("mode"), 0o600))
    try:
        while True:
            kind, size = FRAME.unpack(reader.exactly(FRAME.size))
            if size > CHUNK + 1024:
                raise GpudeckError(f"the agent sent a frame of {size} bytes (at most {CHUNK})")
            payload = reader.exactly(size)
            if kind == END:
                break
            if kind == FAILED:
                sink.abort()
                got.skipped.append((rel, payload.decode("utf-8", "replace")[:300]))
                return
            try:
                data = unpack(kind, payload)
            except ValueError as exc:
                raise GpudeckError(f"{tree.shown(rel)}: {exc}") from None
            sink.write(data)
            got.bytes += len(data)
            progress(len(got.copied), got.bytes)
        sink.commit(_int(entry.get("mtime_ns"), 0))
    except BaseException:
        sink.abort()
        raise
    got.copied.append((rel, sink.size))
    progress(len(got.copied), got.bytes)


def safe_target(target: object) -> bytes:
    if not isinstance(target, str) or not target or "\0" in target:
        raise GpudeckError(f"the agent sent a bad link target: {target!r}")
    return target.encode("utf-8", "surrogateescape")


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
