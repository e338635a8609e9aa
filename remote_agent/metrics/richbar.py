"""Rich progress bars (Lightning's RichProgressBar) read at the steps the bytes prove.

A Rich frame, drawn on a terminal (a `--pty` job), is
``Epoch 0/2  ━━━━╺━━━━ 4/20 0:00:00 • 0:00:01 72.87it/s v_num: 0.000 train_loss: 2.393``:
a description, the bar's glyphs, the counter, elapsed and remaining times, the rate and
`key: value` metrics. `tqdm_form` gives its values the names a tqdm frame's would get.

Where the step comes from. Lightning (2.6, outside an interactive interpreter) never draws a frame
itself: at a batch's end it moves the counter to n, asks for a redraw, sets batch n's values and
asks again; Rich's refresh thread draws the bar as it is when it wakes (at most `refresh_rate`,
100, times a second). So a frame at counter n shows batch n's values, or batch n-1's when the
thread woke between the two (bench/frameworks/rich_frames.py counts both in real runs), and
nothing in the frame tells which; nor does the next frame (a run with 30 ms steps drew
`18/20` with batch 17's loss, then `19/20`: batch 18's loss was never drawn). One frame proves
its step: a new epoch's ``0/N``. Lightning set the last batch's values, then reset the bar for the
new epoch, so its values are the previous epoch's last batch's: step ``epoch * total``, that
epoch's (read only after a frame of an earlier epoch: a stream read from its middle, or a run
resumed from a checkpoint, cannot tell). Any other frame with values its bar's frame before did
not show is read with its epoch and no step; batches between two wake-ups are never drawn, so
never read.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from .values import Number

Values = Dict[str, Number]

GLYPHS = "━╸╺─"
_FRAME = re.compile(
    r"^(?P<desc>.*?)\s*[━╸╺─]+\s+(?P<n>\d+)/(?P<total>\d+)\s+"
    r"(?P<elapsed>[\d:]+|-:--:--)\s+•\s+(?P<remaining>[\d:]+|-:--:--)\s+"
    r"(?P<rate>[\d.]+|\?)\s*it/s\s*(?P<metrics>.*)$"
)
# A value is a number: a message glued after the last frame (Lightning's "`Trainer.fit` stopped:
# `max_epochs=3` reached.") adds nothing.
_LAST_INDEX = re.compile(r"^(Epoch \d+)/\d+$")
_EPOCH = re.compile(r"^Epoch (\d+)(?:/\d+)?$")
_METRIC = re.compile(r"([A-Za-z_][\w./@-]*):\s+([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(?![\w.])")
_DIGITS = re.compile(r"\d+")
_MAX_BARS = 64
_RATE_KEYS = ("it_per_sec", "s_per_it")  # a reset bar's rate reads 0.00: not the last batch's


def may_be_rich(line: str) -> bool:
    return "━" in line and "•" in line


def tqdm_form(text: str) -> Optional[str]:
    """The frame as tqdm would draw it (``Epoch 0: 4/20 [00:00<00:01, 72.87it/s, k=v]``), or None
    for a line that is no Rich frame with metrics."""
    m = _FRAME.match(text)
    if m is None:
        return None
    pairs = _METRIC.findall(m.group("metrics"))
    if not pairs:
        return None
    # Lightning's Rich description is "Epoch {current}/{max_epochs - 1}": 0-based, whatever the
    # lines before it showed (a stream read from its middle has no "Epoch 0" to tell).
    desc = _LAST_INDEX.sub(r"\1", m.group("desc").strip())
    postfix = "".join(", %s=%s" % pair for pair in pairs)
    frame = "%s: %s/%s [00:00<00:00, %sit/s%s]"
    return frame % (desc, m.group("n"), m.group("total"), m.group("rate"), postfix)


class RichBars:
    """One stream's Rich bars: each one's last frame (epoch, counter, total, values shown)."""

    def __init__(self) -> None:
        self._last: Dict[str, Tuple[Optional[int], int, int, str]] = {}

    def place(self, text: str, values: Optional[Values]) -> Optional[Values]:
        """The point of a frame (`text` cleaned, `values` its tqdm form's), or None when it shows
        nothing new."""
        m = _FRAME.match(text)
        if m is None or values is None:
            return None
        desc = m.group("desc").strip()
        found = _EPOCH.match(desc)
        epoch = int(found.group(1)) if found else None
        n, total = int(m.group("n")), int(m.group("total"))
        shown = " ".join("%s=%s" % pair for pair in _METRIC.findall(m.group("metrics")))
        key = _DIGITS.sub("#", desc)
        if len(self._last) >= _MAX_BARS:
            self._last.clear()
        before = self._last.get(key)
        frame = self._last[key] = (epoch, n, total, shown)
        values.pop("step", None)
        if before == frame:
            return None  # drawn again as it was
        if epoch is not None and n == 0:  # a new epoch's bar: the last epoch's last batch
            if before is None or before[0] is None or before[0] >= epoch or before[2] != total:
                return None  # no earlier epoch seen (read from the middle, or resumed)
            for rate in _RATE_KEYS:
                values.pop(rate, None)
            values["epoch"], values["step"] = epoch - 1, epoch * total
            return values
        if before is not None and before[3] == shown:
            return None  # the counter moved, the values are still the frame before's
        return values
