"""One TensorBoard event file, its protobuf bytes built by hand (an Event with a Summary of scalars is
a few tags and lengths) and framed as TFRecords. tensorboardX's generated protobufs and its
pure-Python CRC cost ~25 µs a point; this costs ~2 (bench/bench_export_tensorboard.py). The CRC-32C
comes from google-crc32c (C) when installed, else from the agent's pure-Python one."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from remote_agent.tbread.crc import crc32c as _slow_crc32c
from remote_agent.tbread.crc import mask

_crc32c: Callable[[bytes], int]
try:
    import google_crc32c

    _crc32c = google_crc32c.value
except ImportError:  # pragma: no cover - correct, only slower
    _crc32c = _slow_crc32c

_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


_ONE_BYTE = [bytes([i]) for i in range(128)]


def varint(n: int) -> bytes:
    if 0 <= n < 128:
        return _ONE_BYTE[n]
    if 0 < n < 16384:
        return bytes((n & 0x7F | 0x80, n >> 7))
    if n < 0:
        n += 1 << 64  # int64 fields: two's complement, ten bytes
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): a string, bytes or a nested message."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def text_value(tag: str, text: str) -> bytes:
    """A Summary.Value as tensorboardX's text summary makes it: the text plugin's string tensor."""
    metadata = field(1, field(1, b"text"))  # SummaryMetadata.plugin_data{plugin_name}
    shape = field(2, field(2, b"\x08\x01"))  # TensorShapeProto{dim: [{size: 1}]}
    tensor = b"\x08\x07" + shape + field(8, text.encode("utf-8"))  # dtype DT_STRING, string_val
    # fields in number order, as protobuf serialises them: tag, tensor, metadata
    return field(1, f"{tag}/text_summary".encode()) + field(8, tensor) + field(9, metadata)


class EventFile:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        # the name TensorBoard looks for: events.out.tfevents.<time>.<host>
        path = directory / f"events.out.tfevents.{time.time():.6f}.{socket.gethostname()}"
        self._file = open(path, "wb", buffering=1 << 20)  # noqa: SIM115 - closed by close()
        # per tag: a Summary.Value's bytes up to its float (all but 4 bytes of it), built once
        self._heads: dict[str, bytes] = {}
        self._unflushed = False
        self._write(b"\x09" + _DOUBLE.pack(time.time()) + field(3, b"brain.Event:2"))

    def _write(self, event: bytes) -> None:
        header = _U64.pack(len(event))
        self._file.write(header + _U32.pack(mask(_crc32c(header))) + event + _U32.pack(mask(_crc32c(event))))
        self._unflushed = True

    def _event(self, step: int, walltime: float | None, summary: bytes) -> bytes:
        wall = time.time() if walltime is None else walltime
        return (
            b"\x09" + _DOUBLE.pack(wall) + b"\x10" + varint(step) + b"\x2a" + varint(len(summary)) + summary
        )

    def add_values(self, values: list[tuple[str, float]], step: int, walltime: float | None) -> None:
        """Scalars of one point, each a (tag, value): one event, one Summary.Value per scalar."""
        parts = []
        heads = self._heads
        pack = _FLOAT.pack
        for tag, v in values:
            head = heads.get(tag)
            if head is None:
                name = field(1, tag.encode("utf-8"))
                # Value{tag, simple_value (field 2, 32-bit)}: its length is the tag's field + 5
                head = heads[tag] = b"\x0a" + varint(len(name) + 5) + name + b"\x15"
            try:
                parts.append(head + pack(v))
            except OverflowError:  # beyond a float32: TensorBoard would show it as infinite
                parts.append(head + pack(float("inf") if v > 0 else float("-inf")))
        # _write(_event(...)) inlined: this is the export's hot path, once per point
        summary = b"".join(parts)
        wall = time.time() if walltime is None else walltime
        event = (
            b"\x09" + _DOUBLE.pack(wall) + b"\x10" + varint(step) + b"\x2a" + varint(len(summary)) + summary
        )
        header = _U64.pack(len(event))
        a, b = _crc32c(header), _crc32c(event)
        self._file.write(
            header
            + _U32.pack(((a >> 15 | a << 17) + 0xA282EAD8) & 0xFFFFFFFF)
            + event
            + _U32.pack(((b >> 15 | b << 17) + 0xA282EAD8) & 0xFFFFFFFF)
        )
        self._unflushed = True

    def add_text(self, tag: str, text: str, step: int, walltime: float | None) -> None:
        self._write(self._event(step, walltime, field(1, text_value(tag, text))))

    def flush(self) -> None:
        if self._unflushed:
            self._file.flush()
            self._unflushed = False

    def close(self) -> None:
        self.flush()
        self._file.close()
