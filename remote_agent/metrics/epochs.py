"""Steps that restart every epoch, made global; the epoch a header line gives the lines below it.

``Epoch [5/5], Step [10/40], Loss: 0.21`` counts steps within the epoch: read as the step, a
200-step run collapses onto its last epoch's 40 steps. With the steps per epoch printed beside
it, the global step is ``(epoch - 1) * 40 + 10`` (epochs printed from 1), or ``epoch * 40 + 10``
once the stream has printed an epoch 0. Keras prints ``Epoch 1/8`` on a line of its own; its
lines below (``469/469 - 3s - 6ms/step - accuracy: 0.90 - loss: 0.34``, Keras 2's ``0s - loss:
0.0396 - acc: 0.0021``) carry no epoch: they get the header's, and a ``n/N`` batch counter at
the start of such a line is the step within it. A counter with another total under the same
header is another loop's (``evaluate`` prints its loss as ``fit`` does): it reads nothing. A
script's own banner (``==> Epoch 1/100``) is such a header too, and a line that starts with a
batch counter under it (``Batch 50/469  Loss 2.33``) gets the step ``(epoch - 1) * 469 + 50``;
without any epoch before it, that counter restarts each epoch: the line keeps no step.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from .values import Number

Values = Dict[str, Number]

# "Epoch [5/5], Step [10/40]", "epoch 2/10 iter 30/100", "Epoch: 1/3 | Batch: 120/469"
_EPOCH_AND_STEP = re.compile(
    r"(?i)\bepoch\s*:?\s*\[?\s*(?P<e>\d+)\s*/\s*(?P<epochs>\d+)\s*\]?"
    r".*?\b(?:step|iter|iteration|batch)\s*:?\s*\[?\s*(?P<s>\d+)\s*/\s*(?P<steps>\d+)\s*\]?"
)
# Keras' "Epoch 1/8", and a script's own "==> Epoch 1/100" banner (pytorch-center-loss)
_KERAS_HEADER = re.compile(r"[^\w\s]*\s*Epoch (?P<e>\d+)/(?P<epochs>\d+)\s*\Z")
_KERAS_COUNTER = re.compile(r"\s*(?P<n>\d+)/(?P<total>\d+)\s")
# "Batch 50/469  Loss 2.33 ...", "Batch: 120/469 | Loss ...": a batch counter with no epoch beside it
_BATCH_COUNTER = re.compile(
    r"(?i)\s*(?:batch|iter|iteration|step)\s*:?\s*\[?\s*(?P<n>\d+)\s*/\s*(?P<total>\d+)\b"
)


def epoch_and_step(text: str) -> Optional[Tuple[int, int, int]]:
    """(epoch, step within it, steps per epoch) of a line that prints both with their totals."""
    if "/" not in text:
        return None
    m = _EPOCH_AND_STEP.search(text)
    if m is None or int(m.group("steps")) <= 0:
        return None
    return int(m.group("e")), int(m.group("s")), int(m.group("steps"))


def global_step(epoch: int, step: int, steps: int, zero_based: bool) -> int:
    return (epoch if zero_based else max(epoch - 1, 0)) * steps + step


def is_context_line(text: str) -> bool:
    """Lines read with the lines before them: never by a template's cached recipe."""
    return _KERAS_HEADER.match(text) is not None or epoch_and_step(text) is not None


class Epochs:
    """One stream's epoch context: whether it counts epochs from 0, and Keras' current header."""

    def __init__(self) -> None:
        self.zero_based = False
        self.header: Optional[Tuple[int, int]] = None  # (epoch, epochs) of the last "Epoch E/N"
        self.batches: Optional[int] = None  # the batch counter's total under the header (n/N)

    def learn(self, text: str) -> bool:
        """Remember a Keras epoch header; True when `text` is one."""
        m = _KERAS_HEADER.match(text)
        if m is None:
            return False
        self.header = (int(m.group("e")), int(m.group("epochs")))
        self.batches = None
        if self.header[0] == 0:
            self.zero_based = True  # a script's own "Epoch 0/10" banner: its epochs count from 0
        return True

    def place(self, text: str, values: Values) -> Optional[Values]:
        """The point with its global step and its epoch, as the lines before it tell them."""
        found = epoch_and_step(text)
        if found is not None:
            epoch, step, steps = found
            if epoch == 0:
                self.zero_based = True
            values["step"] = global_step(epoch, step, steps, self.zero_based)
            return values
        if self.header is not None and "epoch" not in values:
            m = _KERAS_COUNTER.match(text)
            batch = _BATCH_COUNTER.match(text) if m is None else None
            if batch is not None:  # a script's own batch counter (from 0 or 1, as it prints it)
                n, total = int(batch.group("n")), int(batch.group("total"))
                if self.batches is None:
                    self.batches = total
                if total != self.batches or n > total:
                    return None  # another loop's counter (a test loop's) under the epoch's banner
                values["step"] = global_step(self.header[0], n, total, self.zero_based)
                values.pop("batch", None)
                values.pop("iteration", None)
            elif m is not None:
                n, total = int(m.group("n")), int(m.group("total"))
                if self.batches is None:
                    self.batches = total
                if total != self.batches:
                    # Another loop's counter under the last epoch's header: evaluate() prints its
                    # loss like fit() does. Not the training loss, and no split is named: nothing.
                    return None
                if "step" not in values and 0 < n <= total:
                    values["step"] = global_step(self.header[0], n, total, self.zero_based)
            values["epoch"] = self.header[0]
        return values
