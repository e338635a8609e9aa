"""A job's output cap: output.log keeps its head and its tail, the middle is dropped.

The job writes straight into output.log (O_APPEND), so the file cannot be rewritten under it.
Instead the middle is punched out (fallocate PUNCH_HOLE): its disk blocks are freed while every
byte offset stays the same, so `logs` and `follow` (by offset, exactly once) need no renumbering;
they skip the hole and say how much was dropped. Only bytes already parsed are dropped.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path
from typing import Callable, Optional, Tuple

from ..spec_defaults import DEFAULT_OUTPUT_CAP, MIN_OUTPUT_CAP

__all__ = ["DEFAULT_OUTPUT_CAP", "MIN_OUTPUT_CAP", "OutputCap"]

BLOCK = 4096
STEP = 1 << 20  # punch at least this much at a time: a loud job costs one syscall per MiB, not per line
_FALLOC_FL_KEEP_SIZE = 0x01
_FALLOC_FL_PUNCH_HOLE = 0x02


def _fallocate() -> Optional[Callable[..., int]]:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.fallocate
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    fn.restype = ctypes.c_int
    return fn


class OutputCap:
    def __init__(self, path: Path, cap: int) -> None:
        self.path = path
        self.cap = cap
        half = cap // 2
        self.head = hole_start(cap)  # the first bytes, kept
        self.tail = half  # at least this many of the last bytes, kept
        self.dropped_to = self.head  # [head, dropped_to) is the hole
        self.unsupported: Optional[str] = None  # why the file system cannot punch holes

    @property
    def gap(self) -> Optional[Tuple[int, int]]:
        return (self.head, self.dropped_to) if self.dropped_to > self.head else None

    def plan(self, parsed_to: int) -> int:
        """Where the hole would end now: past what was parsed never, into the tail never."""
        if self.unsupported is not None:
            return self.dropped_to
        try:
            size = os.stat(str(self.path)).st_size
        except OSError:
            return self.dropped_to
        end = min(size - self.tail, parsed_to) // BLOCK * BLOCK
        return end if end - self.dropped_to >= STEP else self.dropped_to

    def punch(self, end: int) -> None:
        """Free the blocks of [head, end); the hole counts as dropped even if the file system
        refuses (readers were told): `unsupported` then says why, and nothing more is punched."""
        start, self.dropped_to = self.dropped_to, max(self.dropped_to, end)
        if self.unsupported is not None or end <= start:
            return
        fallocate = _fallocate()
        if fallocate is None:
            self.unsupported = "no fallocate in this C library"
            return
        try:
            fd = os.open(str(self.path), os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if fallocate(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, start, end - start) != 0:
                err = ctypes.get_errno()
                if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    self.unsupported = "this file system cannot punch holes (%s)" % os.strerror(err)
        finally:
            os.close(fd)


def hole_start(cap: int) -> int:
    """Where a cap of `cap` bytes starts its hole: no byte before it is ever dropped."""
    return (cap // 2 + BLOCK - 1) // BLOCK * BLOCK


def gap_marker(start: int, end: int) -> bytes:
    """What readers print where the hole is (a line of its own)."""
    return ("\n…[gpudeck: %d bytes of output dropped here by the output cap]…\n" % (end - start)).encode(
        "utf-8"
    )
