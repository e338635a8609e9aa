"""Protobuf's wire format, as far as an Event needs: varints, fixed 32/64-bit and length-delimited
fields. Total: a malformed message raises WireError (the caller skips that record), nothing else."""

from __future__ import annotations

import struct
from typing import Iterator, List, Tuple, Union

Value = Union[int, bytes]

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


class WireError(ValueError):
    pass


def varint(data: bytes, at: int) -> Tuple[int, int]:
    """(value, position after it)."""
    result = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise WireError("truncated varint")
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, at
        shift += 7


def signed64(n: int) -> int:
    """An int64 field's varint as the signed number it encodes."""
    return n - (1 << 64) if n >= 1 << 63 else n


def fields(data: bytes) -> Iterator[Tuple[int, int, Value]]:
    """(field number, wire type, value): an int for varints, the raw bytes for the others."""
    at, end = 0, len(data)
    while at < end:
        key, at = varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, at = varint(data, at)
            yield number, kind, value
        elif kind == 1:
            if at + 8 > end:
                raise WireError("truncated fixed64")
            yield number, kind, data[at : at + 8]
            at += 8
        elif kind == 2:
            length, at = varint(data, at)
            if at + length > end:
                raise WireError("truncated field")
            yield number, kind, data[at : at + length]
            at += length
        elif kind == 5:
            if at + 4 > end:
                raise WireError("truncated fixed32")
            yield number, kind, data[at : at + 4]
            at += 4
        else:  # groups (3, 4) are not in any message read here
            raise WireError("wire type %d" % kind)


def as_float32(value: Value) -> float:
    if not isinstance(value, bytes) or len(value) != 4:
        raise WireError("expected fixed32")
    return shortest32(_F32.unpack(value)[0])


def shortest32(x: float) -> float:
    """A float32 as the shortest decimal that is the same float32 (0.1, not 0.10000000149011612),
    as the program that logged it printed it."""
    if x != x or x in (float("inf"), float("-inf")):
        return x
    for digits in (6, 7, 8):
        y = float("%.*g" % (digits, x))
        if _F32.pack(y) == _F32.pack(x):
            return y
    return x


def as_float64(value: Value) -> float:
    if not isinstance(value, bytes) or len(value) != 8:
        raise WireError("expected fixed64")
    return float(_F64.unpack(value)[0])


def packed(value: Value, kind: int, width: int) -> List[bytes]:
    """A repeated fixed-width field's items: packed (one length-delimited run) or one item."""
    if kind == 2 and isinstance(value, bytes):
        return [value[i : i + width] for i in range(0, len(value) - width + 1, width)]
    return [value] if isinstance(value, bytes) else []


def packed_varints(value: Value, kind: int) -> List[int]:
    if kind == 0 and isinstance(value, int):
        return [value]
    out: List[int] = []
    if isinstance(value, bytes):
        at = 0
        while at < len(value):
            n, at = varint(value, at)
            out.append(n)
    return out
