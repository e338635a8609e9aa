"""Exactly once, in order: the one rule for every stream a client follows, the CLI's (`logs -f`,
`metrics -f`, through remote/reconnect.py) and the TUI's (the fleet model, live/output_stream.py).

Journals: records are numbered by a gap-free `seq` per (job, node); a reader keeps the last seq it
took and takes a batch only from the next one on. A batch that starts past it is a stale
subscription's (an old connection's late push): dropped whole, since the re-tail from the last seq
resends it. Output: a reader keeps the next byte it is owed and takes only bytes from there.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def continues(first: int, last: int) -> bool:
    """A batch whose first seq is `first` may be taken by a reader that took up to `last`."""
    return first <= last + 1


def fresh(records: Sequence[T], last: int, seq: Callable[[T], int]) -> list[T]:
    """The records past `last` (in seq order), or none when they would leave a gap after it."""
    new = sorted((r for r in records if seq(r) > last), key=seq)
    return new if new and continues(seq(new[0]), last) else []


def owed_output(obj: dict[str, Any], offset: int, owed: int) -> tuple[bytes, int] | None:
    """What an `output` push at `offset` gives a reader owed bytes from `owed`: the new bytes and
    where the next owed byte is then. None: nothing new (a stale subscription past a gap, bytes
    taken already, or bad data). A push with `skip_to` (the output cap dropped [offset, skip_to))
    carries the line saying so, not file bytes, and moves the owed byte past the gap."""
    try:
        data = base64.b64decode(obj.get("data") or "", validate=True)
    except (binascii.Error, ValueError, TypeError):
        return None
    skip_to = obj.get("skip_to")
    if isinstance(skip_to, int) and not isinstance(skip_to, bool):
        return (data, skip_to) if offset <= owed < skip_to else None
    if offset > owed or offset + len(data) <= owed:
        return None
    data = data[owed - offset :]
    return data, owed + len(data)
