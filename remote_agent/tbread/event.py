"""The scalars of one TensorBoard Event record: `simple_value` (tensorboardX, torch, TF1) and
one-element tensors (TF2's tf.summary.scalar, JAX/clu and Keras write these), each (tag, value).
Histograms, images, text and other plugins' tensors are left alone."""

from __future__ import annotations

import struct
from typing import Dict, List, Optional, Tuple

from .wire import (
    Value,
    WireError,
    as_float32,
    as_float64,
    fields,
    packed,
    packed_varints,
    shortest32,
    signed64,
)

SCALARS = "scalars"
DATA_CLASS_SCALAR = 1

# TensorProto dtypes a scalar comes in: (the struct format of one element in tensor_content)
_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_INT64, _DT_BFLOAT16, _DT_HALF = 1, 2, 3, 9, 14, 19
_CONTENT = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q", _DT_HALF: "<e"}


class Event:
    __slots__ = ("wall_time", "step", "scalars")

    def __init__(self) -> None:
        self.wall_time: Optional[float] = None
        self.step = 0
        self.scalars: List[Tuple[str, float]] = []


def read_event(data: bytes, plugins: Dict[str, str]) -> Event:
    """The event's step, wall time and scalars. `plugins` remembers each tag's plugin (TF2 writes a
    tag's metadata with its first value only). WireError when the bytes are no Event."""
    event = Event()
    for number, kind, value in fields(data):
        if number == 1 and kind == 1:
            event.wall_time = as_float64(value)
        elif number == 2 and kind == 0 and isinstance(value, int):
            event.step = signed64(value)
        elif number == 5 and kind == 2 and isinstance(value, bytes):
            for n, k, item in fields(value):
                if n == 1 and k == 2 and isinstance(item, bytes):
                    scalar = _value(item, plugins)
                    if scalar is not None:
                        event.scalars.append(scalar)
    return event


def _value(data: bytes, plugins: Dict[str, str]) -> Optional[Tuple[str, float]]:
    tag = ""
    simple: Optional[float] = None
    tensor: Optional[bytes] = None
    plugin: Optional[str] = None
    for number, kind, value in fields(data):
        if number == 1 and kind == 2 and isinstance(value, bytes):
            tag = value.decode("utf-8", "replace")
        elif number == 2 and kind == 5:
            simple = as_float32(value)
        elif number == 8 and kind == 2 and isinstance(value, bytes):
            tensor = value
        elif number == 9 and kind == 2 and isinstance(value, bytes):
            plugin = _plugin(value)
        elif number in (3, 4, 5, 6):  # a histogram, an image, audio: not a scalar
            return None
    if not tag:
        return None
    if plugin is not None:
        plugins[tag] = plugin
    if simple is not None:
        return tag, simple
    if tensor is None or plugins.get(tag, SCALARS) != SCALARS:
        return None
    number_in = _tensor_scalar(tensor)
    return None if number_in is None else (tag, number_in)


def _plugin(metadata: bytes) -> str:
    """SummaryMetadata's plugin name; a non-scalar data class without one counts as another plugin."""
    name, data_class = "", 0
    for number, kind, value in fields(metadata):
        if number == 1 and kind == 2 and isinstance(value, bytes):
            for n, k, v in fields(value):
                if n == 1 and k == 2 and isinstance(v, bytes):
                    name = v.decode("utf-8", "replace")
        elif number == 4 and kind == 0 and isinstance(value, int):
            data_class = value
    if name:
        return name
    return SCALARS if data_class in (0, DATA_CLASS_SCALAR) else "class%d" % data_class


def _tensor_scalar(data: bytes) -> Optional[float]:
    """The one number of a one-element numeric tensor; None for anything else."""
    dtype = 0
    items: List[float] = []
    content: Optional[bytes] = None
    for number, kind, value in fields(data):
        if number == 1 and kind == 0 and isinstance(value, int):
            dtype = value
        elif number == 2 and kind == 2 and isinstance(value, bytes) and _elements(value) != 1:
            return None
        elif number == 4 and kind == 2 and isinstance(value, bytes):
            content = value
        elif number == 5:
            items += [as_float32(v) for v in packed(value, kind, 4)]
        elif number == 6:
            items += [as_float64(v) for v in packed(value, kind, 8)]
        elif number in (7, 10):
            items += [float(signed64(v)) for v in packed_varints(value, kind)]
        elif number == 13:  # half_val: a half's or a bfloat16's bits in an int32
            items += [_half(v, dtype) for v in packed_varints(value, kind)]
    if content is not None:
        return _from_content(content, dtype)
    return items[0] if len(items) == 1 and dtype not in (0, 7, 10) else None


def _elements(shape: bytes) -> int:
    count = 1
    for number, kind, value in fields(shape):
        if number == 2 and kind == 2 and isinstance(value, bytes):
            for n, k, v in fields(value):
                if n == 1 and k == 0 and isinstance(v, int):
                    count *= signed64(v)
        elif number == 3 and value:  # unknown rank
            return -1
    return count


def _half(bits: int, dtype: int) -> float:
    if dtype == _DT_BFLOAT16:
        return float(struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0])
    return float(struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0])


def _from_content(content: bytes, dtype: int) -> Optional[float]:
    if dtype == _DT_BFLOAT16 and len(content) == 2:
        return _half(struct.unpack("<H", content)[0], dtype)
    fmt = _CONTENT.get(dtype)
    if fmt is None or len(content) != struct.calcsize(fmt):
        return None
    value = float(struct.unpack(fmt, content)[0])
    return shortest32(value) if dtype == _DT_FLOAT else value


__all__ = ["Event", "read_event", "WireError", "Value"]
