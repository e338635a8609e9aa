"""What every resize shares: the count asked for (`+1`, `-1`, `N`) and what came of it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import EXIT_USAGE, GpudeckError

_COUNT = re.compile(r"([+-]?)([0-9]{1,4})")


@dataclass(frozen=True)
class Scaled:
    id: str
    name: str
    previous: str
    nodes_before: int
    nodes: int
    dropped: str = ""  # the unreachable nodes left behind, in words
    elastic: str = ""  # an elastic resize (same job): which nodes joined or left, in words

    def __str__(self) -> str:
        if self.elastic:
            return (
                f"{self.id} {self.name}: {self.nodes_before} → {self.nodes} nodes (elastic: {self.elastic})"
            )
        dropped = f"; dropped {self.dropped}" if self.dropped else ""
        return f"{self.id} {self.name}: {self.nodes_before} → {self.nodes} nodes (resized from {self.previous}{dropped})"


def target_count(text: str, current: int) -> int:
    """`+1`/`-1` relative to the current count, `N` absolute; below 1 or unchanged is refused."""
    m = _COUNT.fullmatch(text.strip())
    if not m:
        raise GpudeckError(f"scale: {text!r}: expected +N, -N or N (a node count)", EXIT_USAGE)
    sign, value = m.group(1), int(m.group(2))
    count = current + value if sign == "+" else current - value if sign == "-" else value
    if count < 1:
        raise GpudeckError(
            f"scale: the job has {current} node{'s' * (current != 1)}; {text} would leave {count}: "
            "at least 1 node",
            EXIT_USAGE,
        )
    if count == current:
        raise GpudeckError(f"scale: the job already has {current} node{'s' * (current != 1)}", EXIT_USAGE)
    return count
