"""A message printed between a bar's frames takes the step of the frame drawn after it.

HF Trainer prints its log dict with tqdm.write: the bar is cleared, the dict printed, and the bar
drawn again at the current step. The frame before the dict may be older (tqdm skips frames
within its mininterval), so a stepless point printed right after a bar without metrics waits for
the next line: the bar drawn then gives its step. Any other next line releases it as it was
(a point of that line, in turn, waits a line), and ``flush`` releases what is left at the end.
"""

from __future__ import annotations

from typing import Dict, Optional

from .formats import bar_hint
from .progress import plain_counter
from .values import Number

Values = Dict[str, Number]


class BarSteps:
    def __init__(self) -> None:
        self.after_bar = False  # the last line was a bar frame with a counter and no metrics
        self.held: Optional[Values] = None  # a message's point waiting for the bar drawn after it

    def settle(self, line: str, point: Optional[Values]) -> Optional[Values]:
        """The point to journal for this line: its own, or the one it released."""
        if self.held is None and not self.after_bar:  # most lines: only whether this one is a bar
            if "[" in line and "=" not in line and line.lstrip()[:1].isdigit() and bar_hint(line):
                self.after_bar = plain_counter(line) is not None  # HF's bar: "  3%|▎  | 100/3126 [..."
            return point
        if not line.strip():
            return point  # tqdm's erase ("\r" + spaces): changes nothing
        counter = plain_counter(line) if "[" in line and line.lstrip()[:1].isdigit() else None
        released, self.held = self.held, None
        if released is not None and counter is not None:
            released["step"] = counter
        if point is not None and self.after_bar and "step" not in point and "summary" not in point:
            self.held, point = point, None
        self.after_bar = counter is not None
        if released is None:
            return point
        if point is not None:  # two points for one line: this one waits a line (it has no bar)
            self.held = point
        return released

    def flush(self) -> Optional[Values]:
        held, self.held, self.after_bar = self.held, None, False
        return held
