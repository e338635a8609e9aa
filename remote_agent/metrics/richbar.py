"""Rich progress bars (Lightning's RichProgressBar) read as the tqdm bars they stand for.

A Rich frame, drawn on a terminal (a `--pty` job), is
``Epoch 0/2  ━━━━╺━━━━ 4/20 0:00:00 • 0:00:01 72.87it/s v_num: 0.000 train_loss: 2.393``:
a description, the bar's glyphs, the counter, elapsed and remaining times, the rate and
`key: value` metrics. `tqdm_form` gives the same frame in tqdm's shape, which is read as a tqdm
frame: its postfix's values, and `progress.Bars` places it (one reading per counter position,
never from a `0/N` frame).

The counter is not made the step: Rich draws from a thread of its own (10 times a second), and
Lightning moves the counter to batch n before it sets batch n's values, so a frame may show
`n/20` with batch n-1's loss, and nothing in the output tells which (the frameworks bench saw
1 such frame in 23). A Rich frame's point has its epoch and values, no step.
"""

from __future__ import annotations

import re
from typing import Optional

GLYPHS = "━╸╺─"
_FRAME = re.compile(
    r"^(?P<desc>.*?)\s*[━╸╺─]+\s+(?P<n>\d+)/(?P<total>\d+)\s+"
    r"(?P<elapsed>[\d:]+|-:--:--)\s+•\s+(?P<remaining>[\d:]+|-:--:--)\s+"
    r"(?P<rate>[\d.]+|\?)\s*it/s\s*(?P<metrics>.*)$"
)
# A value is a number: a message glued after the last frame (Lightning's "`Trainer.fit` stopped:
# `max_epochs=3` reached.") adds nothing.
_LAST_INDEX = re.compile(r"^(Epoch \d+)/\d+$")
_METRIC = re.compile(r"([A-Za-z_][\w./@-]*):\s+([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)(?![\w.])")


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
