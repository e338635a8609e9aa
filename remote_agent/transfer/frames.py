"""The `send` stream's wire form, shared by the agent (it writes) and the client (it reads).

Lines are one JSON object each (ASCII: a name whose bytes are not UTF-8 travels as `\\udcXX`
escapes, surrogateescape, and comes back as the same bytes). A file's bytes follow its entry line as
data frames: a 5-byte header (kind, payload length, big-endian) and the payload; `e` ends the file,
`x` (a JSON reason) says it could not be read to the end. See remote_agent/PROTOCOL.md, `send`.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Dict, Optional

CHUNK = 1 << 20  # bytes of a file per data frame, before compression
FRAME = struct.Struct(">cI")
RAW, ZLIB, END, FAILED = b"r", b"z", b"e", b"x"
MAX_LINE = 1 << 16  # a request, manifest or entry line (a name is at most 4096 bytes)
MAX_MANIFEST = 2000000  # entries a client may say it holds
WORTH = 0.9  # zlib's output is sent only when under 90 % of its input


def wire_name(raw: bytes) -> str:
    """A file name's bytes as they travel: UTF-8, any other byte kept as a lone surrogate."""
    return raw.decode("utf-8", "surrogateescape")


def fs_name(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


def parse_line(raw: bytes) -> Optional[Dict[str, Any]]:
    """The object on a line, or None for anything else (readers are total)."""
    try:
        obj = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def same_file(have_size: int, have_mtime_ns: int, size: int, mtime_ns: int) -> bool:
    """rsync's quick check: the same size and modification time. A client whose file system keeps
    whole seconds only could not set the nanoseconds: its whole second then counts as the same."""
    if have_size != size:
        return False
    if have_mtime_ns == mtime_ns:
        return True
    return have_mtime_ns % 1000000000 == 0 and have_mtime_ns // 1000000000 == mtime_ns // 1000000000


class Packer:
    """Frames for one file's chunks: zlib level 1 while it pays; a file whose first chunk does not
    shrink (a checkpoint's floats, an archive) is sent raw from then on, costing no more CPU."""

    def __init__(self, compress: bool) -> None:
        self.compress = compress
        self.first = True

    def frame(self, data: bytes) -> bytes:
        first, self.first = self.first, False
        if self.compress and len(data) >= 64:
            packed = zlib.compress(data, 1)
            if len(packed) < len(data) * WORTH:
                return FRAME.pack(ZLIB, len(packed)) + packed
            if first:
                self.compress = False
        return FRAME.pack(RAW, len(data)) + data


def unpack(kind: bytes, payload: bytes) -> bytes:
    """A data frame's bytes; ValueError for a kind it does not know or a chunk inflating past CHUNK."""
    if kind == RAW:
        return payload
    if kind == ZLIB:
        inflater = zlib.decompressobj()
        try:
            data = inflater.decompress(payload, CHUNK)
        except zlib.error as exc:
            raise ValueError("a compressed chunk does not inflate: %s" % exc) from None
        if inflater.unconsumed_tail or not inflater.eof:
            raise ValueError("a compressed chunk inflates past %d bytes or is cut" % CHUNK)
        return data
    raise ValueError("unknown data frame %r" % kind)
