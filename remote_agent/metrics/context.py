"""What a line says about itself: which split it reports, and the epoch/iteration in its header.

"Test: [10/98] ... loss: 0.74" is a validation loss although its key is plain "loss"; the word
that says so sits in the line's header. Headers such as mmengine's "Epoch(train) [1][50/196]" or
torchvision's "Epoch: [0]" carry the epoch or iteration in brackets the key reader cannot see.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from .values import Number

# An evaluation header: "Test:", "Test set:", "Epoch(val)", "| valid |", "valid on 'valid' subset",
# "validation loss at iteration", or the ImageNet example's " * Acc@1" summary.
_EVAL_HEADER = re.compile(
    r"(?i)(?:^|[\s|\-\]\[(*:])(?:test|val|valid|validation|eval|evaluation|evaluating|validating|testing)"
    r"(?:\s+set\b|\s+on\b|\s+loss\s+at\b|\)|\s*:(?!\s*[-+.\d])|\s*\[|\s*\|)"
    r"|^\s*\*\s+Acc@"
    # Flax's examples: "eval epoch: 2, loss: 0.0512, accuracy: 98.21"
    r"|^\s*(?:eval|val|valid|validation|test)\s+epoch\b"
)

_HEADER = re.compile(
    r"(?P<mm>Epoch|Iter)\((?P<split>train|val|test)\)\s*\[\s*(?P<mm_n>\d+)\s*(?:/\s*\d+\s*)?\]"
    r"|(?:Epoch:?\s*\[\s*(?P<epoch>\d+)\s*(?:/\s*\d+\s*)?\])"
    r"|(?:Iter\s*\[\s*(?P<iter>\d+)\s*/)"
    r"|(?:^Train:\s*(?P<timm_epoch>\d+)\s*\[)"
    # ESPnet2's reporter: "7epoch:train:1-100batch: iter_time=…, loss=…"
    r"|(?:^(?P<esp_epoch>\d+)epoch:(?P<esp_split>train|valid|plot_att|att_plot)?:?\d+-\d+batch:)"
    r"|(?:^\[\s*(?P<bare>\d+)\s*\]\s)"  # "[1000] loss: 0.23": the step, alone in brackets
)


def is_evaluation(text: str) -> bool:
    """Whether the line reports validation/test values under plain names."""
    lowered = text.lower()
    if "val" not in lowered and "test" not in lowered and "* acc@" not in lowered:
        return False
    return _EVAL_HEADER.search(text) is not None


def header(text: str) -> Tuple[Dict[str, Number], Optional[str]]:
    """The epoch or iteration of a bracketed header, and the split it names (mmengine, ESPnet)."""
    if "[" not in text and "epoch:" not in text:
        return {}, None
    m = _HEADER.search(text)
    if m is None:
        return {}, None
    if m.group("mm"):
        index = "epoch" if m.group("mm") == "Epoch" else "step"
        split = m.group("split")
        return {index: int(m.group("mm_n"))}, None if split == "train" else "val"
    if m.group("epoch"):
        return {"epoch": int(m.group("epoch"))}, None
    if m.group("iter"):
        return {"step": int(m.group("iter"))}, None
    if m.group("esp_epoch"):
        return {"epoch": int(m.group("esp_epoch"))}, None if m.group("esp_split") == "train" else "val"
    if m.group("bare"):
        return {"step": int(m.group("bare"))}, None
    return {"epoch": int(m.group("timm_epoch"))}, None
