"""The straggler judgement (issue 34): which node of a multi-node job lags the others, sustained.

A node is a straggler when, in each of the last ceil(SUSTAIN / WINDOW) + 1 windows (windows.py;
the one more makes sure the lag has lasted the whole SUSTAIN whatever the windows' phase), its
measure is at most (1 - MARGIN) × the median of the other nodes' measures in that window. The
measure is the step rate (steps/s) when every node journals steps, else the mean GPU utilisation
when every node has GPU samples, else nothing is judged (missing data never names a node).
Defaults: WINDOW 30 s, MARGIN 0.25 (25 % slower), SUSTAIN 120 s (5 windows); settable with
GPUDECK_STRAGGLER_WINDOW / _MARGIN / _SUSTAIN where the judgement runs (the client's `ps`,
`inspect` and TUI). A window where a node has no measure (it started later, its history is
shorter), where the others' median is 0 (every node waits: a hang, not a straggler), or a brief
hiccup shorter than the sustain never names one; the name goes as soon as the newest window no
longer lags (it caught up). Pure: the clock comes in as each node's `now` (its host's time).

A limit: nodes that synchronise every step (DDP's all-reduce) step at the slowest node's pace, so
their step rates agree and name nobody, and a GPU waiting in a collective reads busy too; such a
job's slow node shows here only where the nodes' own numbers differ (each prints its steps, or
their GPU utilisation differs).
"""

from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from .windows import step_rates, util_means

WINDOW = 30.0
MARGIN = 0.25
SUSTAIN = 120.0
ENV = {
    "window": "GPUDECK_STRAGGLER_WINDOW",
    "margin": "GPUDECK_STRAGGLER_MARGIN",
    "sustain": "GPUDECK_STRAGGLER_SUSTAIN",
}


class Settings(NamedTuple):
    window: float = WINDOW  # seconds per window
    margin: float = MARGIN  # lagging: at most (1 - margin) × the others' median
    sustain: float = SUSTAIN  # seconds a node must lag, window after window

    @property
    def windows(self) -> int:
        """Windows a node must lag in, newest back: one more than the sustain spans, so the lag
        began before the sustain's start, whatever the windows' phase."""
        return max(1, int(math.ceil(self.sustain / self.window - 1e-9))) + 1


def settings(env: Optional[Mapping[str, str]] = None) -> Settings:
    """The defaults, with any of the GPUDECK_STRAGGLER_* variables that read as a sane number."""
    env = os.environ if env is None else env
    got = {}
    for field, name in ENV.items():
        try:
            value = float(env.get(name, ""))
        except ValueError:
            continue
        ok = 0 < value < 1 if field == "margin" else 0.05 <= value <= 3600
        if ok:
            got[field] = value
    return Settings(**got)


class NodePace(NamedTuple):
    """One node's recent progress as its agent reported it (points.py)."""

    node: str
    now: float  # its host's time when it answered
    steps: Sequence[Sequence[float]] = ()  # [[t, step], …]
    util: Sequence[Sequence[float]] = ()  # [[t, mean GPU %], …]

    @classmethod
    def read(cls, node: Any, pace: Any) -> Optional[NodePace]:
        """From a job object's `pace` (None when it has none or it is not that shape)."""
        if not isinstance(pace, dict) or not _num(pace.get("now")):
            return None
        return cls(str(node), float(pace["now"]), _points(pace.get("steps")), _points(pace.get("util")))


class Straggler(NamedTuple):
    node: str
    measure: str  # "steps/s" or "% GPU"
    value: float  # its measure in the newest window
    others: float  # the other nodes' median there
    lagging_s: float  # how long it has lagged (whole windows, as far back as the history shows)
    why: str


def rates(
    nodes: Sequence[NodePace], s: Settings, count: int
) -> Optional[Tuple[str, Dict[str, List[Optional[float]]]]]:
    """(measure, {node: [value per window, newest first]}), or None when the nodes lack a common one."""
    if len(nodes) >= 2 and all(n.steps for n in nodes):
        return "steps/s", {n.node: step_rates(n.steps, n.now, s.window, count) for n in nodes}
    if len(nodes) >= 2 and all(n.util for n in nodes):
        return "% GPU", {n.node: util_means(n.util, n.now, s.window, count) for n in nodes}
    return None


def _lags(mine: Optional[float], others: List[Optional[float]], margin: float) -> Optional[float]:
    """The others' median when `mine` lags it by the margin in this window, else None."""
    known = [v for v in others if v is not None]
    if mine is None or not known:
        return None
    import statistics  # here: most listings judge no multi-node job (statistics loads decimal, fractions)

    median = statistics.median(known)
    return median if median > 0 and mine <= (1 - margin) * median else None


def judge(nodes: Sequence[NodePace], s: Optional[Settings] = None) -> List[Straggler]:
    """The stragglers now, slowest first (usually none; one in a 2-node job at most)."""
    s = s or settings()
    history = max(s.windows, int(600 // s.window))  # as far back as the points go, for "for 3 min"
    found = rates(nodes, s, history)
    if found is None:
        return []
    measure, per_node = found
    out = []
    for node, mine in per_node.items():
        lagged = 0
        for j in range(history):
            if _lags(mine[j], [v[j] for k, v in per_node.items() if k != node], s.margin) is None:
                break
            lagged += 1
        if lagged < s.windows:
            continue
        import statistics

        median = statistics.median(v[0] for k, v in per_node.items() if k != node and v[0] is not None)
        value = float(mine[0] or 0.0)
        span = lagged * s.window
        why = "node %s at %s %s vs %s on the others, for %s" % (
            node,
            _fmt(value),
            measure,
            _fmt(median),
            _span(span),
        )
        out.append(Straggler(node, measure, value, float(median), span, why))
    return sorted(out, key=lambda g: g.value / g.others if g.others else 0.0)


def latest(
    nodes: Sequence[NodePace], s: Optional[Settings] = None
) -> Dict[str, Tuple[Optional[float], Optional[float]]]:
    """Each node's step rate and GPU utilisation in the newest window (None where unknown)."""
    s = s or settings()
    out: Dict[str, Tuple[Optional[float], Optional[float]]] = {}
    for n in nodes:
        rate = step_rates(n.steps, n.now, s.window, 1)[0] if n.steps else None
        util = util_means(n.util, n.now, s.window, 1)[0] if n.util else None
        out[n.node] = (rate, util)
    return out


def _fmt(v: float) -> str:
    return "%.0f" % v if v >= 10 else "%.2g" % v if v < 1 else "%.1f" % v


def _span(seconds: float) -> str:
    return "%.0f s" % seconds if seconds < 120 else "%.0f min" % (seconds / 60)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) < 1e300


def _points(raw: Any) -> List[List[float]]:
    """Total reader: keeps the [t, value] pairs of numbers, in time order."""
    if not isinstance(raw, list):
        return []
    kept = [
        [float(p[0]), float(p[1])]
        for p in raw[:5000]
        if isinstance(p, list) and len(p) == 2 and _num(p[0]) and _num(p[1])
    ]
    kept.sort(key=lambda p: p[0])
    return kept
