"""The framing between a command and its host's warm connection (warm_master.py) on the unix socket.

One unix connection carries one remote command (or one query), like one SSH channel. Every frame is
a type byte, a 4-byte big-endian length, and that many bytes. Client → master: `Q` a query (JSON:
{"op": "check" | "exit" | "memo_get" | "memo_put", ...}), `E` run a command (JSON: {"command",
"window", "packet"}), `I` stdin bytes, `W` end of stdin. Master → client: `A` the answer to Q or E
(JSON), `F` a refusal (text), `O` stdout bytes, `e` stderr bytes, `S` the exit status (JSON int),
`Z` the channel closed (nothing follows). Closing the unix connection closes the channel.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

HEADER = struct.Struct(">cI")
FRAME_MAX = 1 << 20  # a larger length is not ours: the peer is out of step
CHUNK = 1 << 16  # stdin/stdout bytes per frame


class FrameError(Exception):
    """The peer sent something that is not a frame (or hung up mid-frame)."""


def send(sock: socket.socket, kind: bytes, payload: bytes = b"") -> None:
    sock.sendall(HEADER.pack(kind, len(payload)) + payload)


def send_json(sock: socket.socket, kind: bytes, value: Any) -> None:
    send(sock, kind, json.dumps(value).encode())


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    parts: list[bytes] = []
    got = 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 20))
        if not chunk:
            if got:
                raise FrameError("the peer hung up mid-frame")
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def recv(sock: socket.socket) -> tuple[bytes, bytes] | None:
    """(type, payload); None when the peer closed between frames."""
    header = _exactly(sock, HEADER.size)
    if header is None:
        return None
    kind, size = HEADER.unpack(header)
    if size > FRAME_MAX:
        raise FrameError(f"frame of {size} bytes")
    payload = _exactly(sock, size) if size else b""
    if payload is None:
        raise FrameError("the peer hung up mid-frame")
    return kind, payload
