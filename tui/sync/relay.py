"""A snapshot relayed from a host that holds it to one that lacks it, through this machine and
never onto its disk: the old host's `code_send` stream speaks the frames of the new host's
`receive` (remote_agent/PROTOCOL.md), so each frame is passed on as it arrives."""

from __future__ import annotations

import json
import struct
import zlib

from remote_agent.codestore.manifest import snapshot_id

from ..actions.agents import ByteStream
from .upload import Uploaded, UploadError, read_answer

MAX_FRAME = 64 << 20
MAX_MANIFEST = 512 << 20


def relay(
    source: ByteStream, target: ByteStream, snapshot: str, source_host: str, target_host: str
) -> Uploaded:
    """`source`: `code_send SNAPSHOT` on source_host; `target`: `receive` on target_host."""
    kind, payload = _frame(source, source_host)
    if kind != b"M":
        raise UploadError(f"{source_host}: code_send began with {kind!r}, not the manifest")
    inflater = zlib.decompressobj()
    if snapshot_id(inflater.decompress(payload, MAX_MANIFEST)) != snapshot or inflater.unconsumed_tail:
        raise UploadError(f"{source_host}: code_send sent another snapshot than {snapshot[:12]}")
    target.write(_framed(kind, payload))
    asked = read_answer(target, target_host)
    need = list(asked.get("need") or [])
    body = json.dumps({"need": need}).encode("ascii")
    source.write(struct.pack(">I", len(body)) + body)
    source.end_input()
    wire = 5 + len(payload)
    while True:
        kind, payload = _frame(source, source_host)
        target.write(_framed(kind, payload))
        wire += 5 + len(payload)
        if kind == b"e":
            break
        if kind not in (b"z", b"r"):
            raise UploadError(f"{source_host}: code_send sent an unknown frame {kind!r}")
    target.end_input()
    done = read_answer(target, target_host)
    for host, stream in ((source_host, source), (target_host, target)):
        status, last = stream.finish()
        if status not in (0, None):
            raise UploadError(f"{host}: the relay's stream exited with status {status}: {last}")
    return Uploaded(
        snapshot,
        int(done.get("received", 0)),
        int(done.get("received_bytes", 0)),
        wire,
        bool(asked.get("have")),
    )


def _frame(stream: ByteStream, host: str) -> tuple[bytes, bytes]:
    head = stream.read_exactly(5)
    kind, (length,) = head[:1], struct.unpack(">I", head[1:])
    if length > MAX_FRAME:
        raise UploadError(f"{host}: code_send sent a frame of {length} bytes: not our agent")
    payload = stream.read_exactly(length) if length else b""
    if kind == b"!":
        try:
            message = str(json.loads(payload)["error"])
        except (ValueError, KeyError, TypeError):
            message = payload[:200].decode("utf-8", "replace")
        raise UploadError(f"{host}: {message}")
    return kind, payload


def _framed(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload
