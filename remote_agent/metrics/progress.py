"""tqdm bars as they really redraw: one reading per counter position, and the counter as the step.

tqdm (and Lightning's TQDM bar on it) redraws when the counter moves, still showing the previous
postfix, then again once the loop sets the new one (``set_postfix``): the first frame at a new
position carries the old position's values, and a closing bar draws its last frame again. A new
epoch's bar opens at ``0/20`` with the last epoch's loss in its postfix. So a bar's values are
read only at a position with progress (never ``0/N``), and only from a frame whose postfix
differs from that bar's frame before it: each value once, at the position it settles on
(Lightning sets a batch's values after moving the counter to it; a plain loop's ``set_postfix``
shows iteration ``i``'s values at counter ``i``, its 0-based index). The counter is the step: ``n`` for a bar over the whole
run; for a bar whose description names the epoch (``Epoch 3: 45%| 9/20``, Lightning counts from
0; ``Epoch 3/10`` from 1 unless the stream showed an epoch 0), ``epoch * total + n``; a bar
with the same description that starts over is the next pass: ``passes * total + n``.
Bars without metrics in their postfix are left alone (HF Trainer's: its log dicts are lines of
their own).
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from .formats import bar_hint, bar_position
from .values import Number

Values = Dict[str, Number]

_DESC_EPOCH = re.compile(r"(?i)\bepoch\s*:?\s*(?P<e>\d+)(?P<of>\s*/\s*\d+)?")
_DIGITS = re.compile(r"\d+")
_MAX_BARS = 256


def may_be_bar(text: str) -> bool:
    """A bar with metrics in its postfix: read with the frames before it, never by a template."""
    if not (bar_hint(text) and "=" in text and "[" in text):
        return False
    found = bar_position(text)
    return found is not None and "=" in found[3]


def plain_counter(text: str) -> Optional[int]:
    """The counter of a bar frame with no description and no metrics (HF Trainer's, over the
    whole run: ``  3%|▎  | 100/3126 [00:21<10:41,  4.72it/s]``), or None."""
    if not bar_hint(text) or "[" not in text:
        return None
    found = bar_position(text)
    if found is None or found[0].strip() or "=" in found[3] or found[2] is None or not found[1].isdigit():
        return None
    return int(found[1])


class Bars:
    """One stream's bars: each one's last frame, and what their counters have done."""

    def __init__(self) -> None:
        self._frames: Dict[str, Tuple[int, str]] = {}  # per description: (counter, postfix) last drawn
        self._zero_based = False  # an "Epoch 0" seen: "Epoch E/N" descriptions count from 0
        self._passes: Dict[str, Tuple[int, int]] = {}  # per description without digits: (passes, last n)

    def place(self, text: str, values: Optional[Values]) -> Optional[Values]:
        """The point of a bar frame as read once per position, with its step; None for a frame
        that shows no new values. Lines that hold no bar with metrics pass as they are."""
        if not bar_hint(text):
            return values
        found = bar_position(text)
        if found is None or "=" not in found[3]:
            return values
        desc, counter, total_text, postfix = found
        if not counter.isdigit():
            return values
        n, key, postfix = int(counter), desc.strip(), postfix.strip()
        if len(self._frames) >= _MAX_BARS:
            self._frames.clear()
        before = self._frames.get(key)
        self._frames[key] = (n, postfix)
        epoch = _DESC_EPOCH.search(desc)
        shape = _DIGITS.sub("#", key)
        passes, last_n = self._passes.get(shape, (0, -1))
        if epoch is None and n < last_n:
            passes += 1  # the same bar started over: the next pass
        self._passes[shape] = (passes, n)
        if n == 0:
            return None  # no progress yet: a new epoch's bar shows the last epoch's postfix
        if before is not None and before[1] == postfix:
            return None  # the same values drawn again (the counter moved, or the bar closed)
        if values is None or "step" in values:
            return values  # the bar prints its own step (e.g. a "Steps" bar already read)
        total = int(total_text) if total_text is not None and total_text.isdigit() else None
        if epoch is not None:
            if total is None:
                return values
            e = int(epoch.group("e"))
            if e == 0:
                self._zero_based = True
            zero_based = self._zero_based or epoch.group("of") is None
            values["step"] = (e if zero_based else max(e - 1, 0)) * total + n
            return values
        if passes and total is None:
            return values
        values["step"] = passes * (total or 0) + n
        return values
