"""Slurm's compact node lists (`n[1-3,5]`, `gpu-a[01-02],gpu-b7`) expanded in order, without a
`scontrol show hostnames` per listing: the rank of a node is its place in the expanded list
(SLURM_NODEID counts the same way), so each node of a job can say which compute node it is on."""

from __future__ import annotations

import re
from typing import List, Optional

MAX_NAMES = 4096  # a bigger list is not expanded: readers are total, writers bounded
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(text: str) -> List[str]:
    """`a[1-2],b` → ["a[1-2]", "b"]: commas inside brackets belong to the range."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _expand_one(item: str) -> Optional[List[str]]:
    found = re.match(r"^([^\[\]]*)\[([^\[\]]+)\]([^\[\]]*)$", item)
    if found is None:
        return None if ("[" in item or "]" in item) else [item]
    prefix, ranges, suffix = found.groups()
    names: List[str] = []
    for piece in ranges.split(","):
        bounds = _RANGE.match(piece.strip())
        if bounds is None:
            return None
        low, high = bounds.group(1), bounds.group(2) or bounds.group(1)
        if int(high) < int(low) or int(high) - int(low) > MAX_NAMES:
            return None
        width = len(low)  # n[01-10]: zero-padded as written
        names.extend("%s%0*d%s" % (prefix, width, k, suffix) for k in range(int(low), int(high) + 1))
    return names


def expand(nodelist: Optional[str]) -> List[str]:
    """The node names in Slurm's order; [] for no list or one this reader does not understand."""
    if not nodelist:
        return []
    names: List[str] = []
    for item in _split_top(nodelist.strip()):
        got = _expand_one(item)
        if got is None:
            return []
        names.extend(got)
        if len(names) > MAX_NAMES:
            return []
    return names


def node_of_rank(nodelist: Optional[str], rank: str) -> Optional[str]:
    """The compute node that runs rank `rank` of an allocation on `nodelist`, None when unknown."""
    names = expand(nodelist)
    return names[int(rank)] if rank.isdigit() and int(rank) < len(names) else None
