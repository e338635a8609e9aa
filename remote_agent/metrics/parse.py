"""Metric points from whatever a training script prints: ``parse_line(line) -> dict | None``.

The job supervisor calls this for every output line (already split on ``\\n`` and ``\\r``). It is
pure, never raises, and cheap on the ~90 % of lines that hold no metric.

Understood: one JSON object per line (the recommended format; values may be strings), Python
dict reprs (Hugging Face Trainer), tqdm bars with postfix metrics (Lightning, accelerate,
diffusers, kohya, torchtune), Keras progress lines, and ``key: value`` / ``key=value`` /
``key value |`` logs (timm, torchvision MetricLogger, mmengine/mmcv, Megatron-LM, DeepSpeed,
nanoGPT, fairseq, detectron2, litgpt, mlx-lm, the PyTorch examples), Ultralytics YOLO rows.

Result: canonical names ``loss``, ``step``, ``epoch``, ``lr`` and normalised others
(``val_loss``, ``grad_norm``, ``box_loss``...); ints stay ints; non-finite values are the strings
"nan", "inf", "-inf". ``loss`` is always the current training loss: never a validation value,
never a loss scale, the total when a line prints a total and its parts, the sum when it prints
only parts (never a GAN's parts); the full definition is README.md beside this file. A JSON line
with an ``event`` key is an event, handled by the supervisor: None here. Rows of a table whose
header names the columns need the header: ``LineParser`` remembers it.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from . import boosting, context, formats, kv, structured
from .canonical import SIGNAL_HINT, is_signal
from .rules import finalise
from .values import Number, clean, unwrap_scalars

__all__ = ["may_hold_point", "parse_line"]

Values = Dict[str, Number]

# Scanning stops here: metric lines are short, a 100 kB line is a dump (JSON is still decoded whole).
_SCAN_LIMIT = 8192
_MAX_GLUED = 8  # segments read from one physical line (bar, message, bar...)
_DIGIT = re.compile(r"\d")


def parse_line(line: str) -> Optional[Dict[str, Number]]:
    """The metric point one output line carries, or None when it carries none."""
    try:
        return _parse(line)
    except Exception:  # a parser bug must never take the supervisor down with it
        return None


def may_hold_point(line: str) -> bool:
    """False when a cheap look proves the line holds no point (most output lines): no number, or
    no name of a measurement, no brace and no name-less layout (a YOLO row)."""
    return _prefiltered(line) is not None


def _prefiltered(line: str) -> Optional[str]:
    """The cleaned line when it may hold a point, else None."""
    if _DIGIT.search(line) is None:
        lowered = line.lower()
        if "nan" not in lowered and "inf" not in lowered:
            return None  # the cheap exit: no number on the line at all
    text = clean(line).strip()
    if (
        "{" not in text
        and SIGNAL_HINT.search(text.lower()) is None
        and not formats.layout_hint(text)
        and not (text[:1] == "[" and boosting.HINT.match(text))
    ):
        return None  # no name of a measurement and no YOLO row: nothing here can become a point
    return text


def _parse(line: str) -> Optional[Values]:
    if not isinstance(line, str):
        return None
    text = _prefiltered(line)
    if text is None:
        return None
    if text[:1] == "[":
        rounds = boosting.read(text)  # XGBoost / LightGBM: "[N]\ttrain-logloss:…"
        if rounds is not None:
            return rounds
    brace = text.find("{")
    if brace != -1 and text.endswith("}"):
        found = structured.parse_braced(text[brace:])
        if found is not None:
            values, trusted = found
            if values is None:  # an event line
                return None
            if brace:
                values = _merge(_read(text[:brace], 1), values)
            return values if values and (trusted or _has_signal(values)) else None
    values = _read(text[:_SCAN_LIMIT], _MAX_GLUED)
    return values if _has_signal(values) else None


def _read(text: str, segments_left: int) -> Values:
    """Values of one physical line, which may hold a progress bar glued to the next message."""
    if segments_left <= 0 or not text.strip():
        return {}
    if formats.bar_hint(text):
        bar = formats.find_bar(text)
        if bar is not None:
            desc, progress, pairs, rest = bar
            values = _merge(_read_plain(desc), structured.from_pairs(pairs))
            if values:  # a bar's speed and count matter only beside its metrics
                values = _merge(progress, values)
            # Glued text is the next message, newer than the bar: its values win.
            return _merge(values, _read(rest, segments_left - 1))
    return _read_plain(text)


def _read_plain(text: str) -> Values:
    """One segment of text with no progress bar: framework layouts first, then key/value pairs."""
    if not text.strip():
        return {}
    yolo = formats.yolo_row(text) or formats.yolo_validation(text)
    if yolo is not None:
        return yolo
    if "(" in text:
        text = unwrap_scalars(text)  # print(f"loss: {loss}") shows "loss: tensor(2.31, device='cuda:0')"
    values: Values = {}
    found = formats.special(text)
    if found is not None:
        values, text = found
    if kv.looks_like_config(text):
        return values
    indexes, split = context.header(text)
    evaluation = split == "val" or context.is_evaluation(text)
    for name, value in kv.scan(text).items():
        values.setdefault(name, value)
    for name, value in indexes.items():
        values.setdefault(name, value)
    return finalise(values, evaluation)


def _merge(first: Values, second: Values) -> Values:
    if not first:
        return second
    merged = dict(first)
    merged.update(second)
    return merged


def _has_signal(values: Values) -> bool:
    return any(is_signal(name) for name in values)
