"""Giving the C heap's free pages back to the kernel once a supervisor has nothing to do (issue 33:
an idle job's supervisor as small as a stdlib interpreter allows). The agent is run from source (a
zipapp, or a checkout without bytecode): each module a supervisor imports is compiled, and the
compiler's freed memory stays in the C heap's middle, which free() never returns. glibc's
malloc_trim(0) returns every whole free page of every arena (~1.4 MiB per supervisor here, about
an eighth of it). Elsewhere (musl, macOS: no malloc_trim) it does nothing. Standard library only."""

from __future__ import annotations

import ctypes
from typing import Any

_trim: Any = None  # None: not looked up yet; False: this libc has none


def trim() -> bool:
    """Return the heap's free pages (a few ms at most: it walks the heap once); False where this
    libc cannot."""
    global _trim
    if _trim is None:
        try:
            # dlopen(NULL): libc is already loaded (find_library would run ldconfig)
            _trim = ctypes.CDLL(None).malloc_trim
            _trim.argtypes = [ctypes.c_size_t]
            _trim.restype = ctypes.c_int
        except (OSError, AttributeError):
            _trim = False
    if _trim is False:
        return False
    _trim(0)
    return True
