"""Which rank of a distributed job printed a line, and per-rank series for the ranks but rank 0.

A DDP script that prints on every rank interleaves ``[rank 0] step 20 loss 2.31`` with
``[rank 1] step 20 loss 2.35``: read as one series the chart zig-zags between ranks. A line's rank
comes from its prefix: the script's own (``[rank 1]``, ``Rank 1,``, ``rank=1``, ``rank1:``),
PyTorch's (``[rank1]:``) or torchrun's ``--tee`` (``[default1]:``, the worker's local rank).
A point then carries ``rank``; rank 0's values keep their names (``loss`` is rank 0's), every
other rank's values are named ``<name>/rank<N>`` (``loss/rank1``), indexes (step, epoch) as they
are. A line that states the mean over ranks (``mean loss 2.33`` on any rank) is ``loss`` itself;
once one was printed, rank 0's own values move to ``loss/rank0`` (before it, they were ``loss``:
a stream cannot know that a mean will follow). Two ranks' writes that share one physical line (print's text and newline are two writes)
are read apart and merged when they agree on the step.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .canonical import PLAIN_INDEXES
from .values import Number

Values = Dict[str, Number]

# A rank named at the very start of the line (a rank word anywhere else may be a LoRA rank).
_PREFIX = re.compile(
    r"(?:"
    r"\[(?:global[_ ])?rank\s?[:=]?\s?(?P<bracketed>\d+)\]:?"  # [rank 1] [rank1]: [Rank 1] [RANK 1]
    r"|\[default(?P<tee>\d+)\]:"  # torchrun --tee: "[default1]:" (its default role's local rank)
    r"|(?:global[_ ])?rank\s?[:=]?\s?(?P<bare>\d+)(?:\s*[:,|\-]|\s)"  # rank1: / Rank 1, / rank=1
    r")\s*",
    re.IGNORECASE,
)
# A second prefix inside the line: another rank's write glued to this one.
_GLUED = re.compile(r"\[(?:global[_ ])?rank\s?[:=]?\s?\d+\]|\[default\d+\]:", re.IGNORECASE)
_MEAN = re.compile(
    r"(?i)(?:\b|_)(?:mean|avg|average|averaged|reduced|global)[ _]?loss|\bloss[ _](?:mean|avg)\b"
)
_KEEP = PLAIN_INDEXES | {"rank", "summary"}
_INITIALS = frozenset("[rRgG")  # a prefix starts the line


def split(line: str) -> Tuple[Optional[int], str]:
    """(the rank a line's prefix names, the line without its prefixes); (None, line) without one."""
    if line[:1] not in _INITIALS:
        return None, line
    rank: Optional[int] = None
    local: Optional[int] = None
    for _ in range(2):  # "[default0]:[rank0]: …": torchrun's prefix around PyTorch's own
        m = _PREFIX.match(line)
        if m is None:
            break
        if m.group("tee") is not None:
            local = int(m.group("tee"))
        else:
            rank = int(m.group("bracketed") or m.group("bare"))
        line = line[m.end() :]
    found = rank if rank is not None else local
    return found, line


def segments(line: str) -> List[str]:
    """The line cut before every rank prefix after its first character (usually one piece)."""
    cuts = [m.start() for m in _GLUED.finditer(line, 1)]
    if not cuts:
        return [line]
    bounds = [0] + cuts + [len(line)]
    return [line[a:b] for a, b in zip(bounds, bounds[1:])]  # noqa: B905


def states_mean(text: str) -> bool:
    """Whether a rank's line reports the loss averaged over ranks ("mean loss", "avg_loss")."""
    return _MEAN.search(text) is not None


def tag(values: Values, rank: int, own_series: bool = False) -> Values:
    """The point as rank `rank`'s: `rank` added; other ranks' measurements renamed per rank (and
    rank 0's too with `own_series`: once a mean over ranks is printed, `loss` is that mean)."""
    if rank == 0 and not own_series:
        tagged = dict(values)
    else:
        suffix = "/rank%d" % rank
        tagged = {(name if name in _KEEP else name + suffix): value for name, value in values.items()}
    tagged["rank"] = rank
    return tagged


def merge(points: List[Values]) -> Optional[Values]:
    """Several ranks' points from one physical line as one point, when their steps agree and no
    name is read twice; else the first alone (never a value under another rank's name)."""
    if len(points) == 1:
        return points[0]
    merged = dict(points[0])
    for point in points[1:]:
        if point.get("step") != merged.get("step") or point.get("epoch") != merged.get("epoch"):
            return points[0]
        for name, value in point.items():
            if name in ("rank", "step", "epoch"):
                continue
            if name in merged:
                return points[0]
            merged[name] = value
    merged["rank"] = min(p["rank"] for p in points if isinstance(p.get("rank"), int))
    return merged
