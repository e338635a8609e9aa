"""The generic reader: ``key: value``, ``key=value`` and ``key value`` pairs anywhere in free text.

Most frameworks print some mix of these (timm, MetricLogger, mmengine, Megatron, DeepSpeed,
nanoGPT, fairseq, detectron2, Keras, mlx-lm...). The hard part is what to leave alone: a number
only counts when a key-like word sits right before it, and never when it is part of a date, a
time, a version, an IP address, a path or a fraction such as "3/10 files".
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from .canonical import DROPPED, PLAIN_INDEXES, is_signal, normalise, plain_key_allowed
from .values import Number, to_number

_WORD = r"[A-Za-z][\w.@/\-]*"
_KV = re.compile(
    r"(?<![\w.@/\-])"
    r"(?P<key>" + _WORD + r"(?: " + _WORD + r"){0,3}?)"  # up to four words: "lm loss", "Learning Rate"
    r"(?:\s*\((?P<kunit>[A-Za-z/%]{1,16})\))?"  # Megatron/DeepSpeed: "iter time (s): 0.5"
    r"(?P<sep>\s*[:=]\s*|\s+)"
    r"(?P<open>[\[\"']?)"  # DeepSpeed lr=[1e-05, 1e-05]; quoted numbers
    # "1,200": thousands grouped (BasicSR's "iter:   1,200"), before the plain forms.
    r"(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d|,\d)(?:\.\d+)?|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
    r"|(?:[Nn]a[Nn]|[Ii]nf(?:inity)?)\b))"
    r"(?P<frac>\s*/\s*\d+)?"  # "iteration 100/ 500000", "Epoch 3/100"
    r"[\"']?"
    r"(?P<unit>%|[A-Za-z]{1,3}(?:/[A-Za-z]{1,4})?)?"
    r"(?![\w.]|[:/\-]\S)"  # not a date, time, version, IP, path, or "3/10 files"
)

# "key=Word" assignments whose value is no number: two of them mark a config/argument dump
# (Namespace(...), Ultralytics "engine/trainer: amp=True, box=7.5, ..."), not a metric line.
_NON_NUMERIC_ASSIGN = re.compile(
    r"\b[A-Za-z_]\w*=(?:True|False|None|'[^']*'|\"[^\"]*\"|[A-Za-z_/][\w./-]*)(?=[,\s)]|$)"
)

# DeepSpeed's throughput timer glues pairs with slashes: "epoch=0/micro_step=10/global_step=10".
_SLASH_BETWEEN_PAIRS = re.compile(r"(?<=\d)/(?=[A-Za-z_]+=)")

# "[W socket.cpp:436]", "[logging.py:96:log_dist]": a source location, not a key.
_FILE_KEY = re.compile(r"\.(?:py|pyx|cpp|cc|cu|c|h|hpp|so|json|ya?ml|txt|log|pt|pth|ckpt)\b", re.IGNORECASE)

_UNIT_SUFFIX = {"ms": "_ms"}  # seconds are the default unit of a time; milliseconds say so


# A constructor call with keyword arguments: "AdamW(lr=0.001667, momentum=0.9)", "Namespace(".
_CALL_WITH_KWARGS = re.compile(r"\b[A-Za-z_]\w*\(\s*[A-Za-z_]\w*=")


def looks_like_config(text: str) -> bool:
    """Settings printed once at start-up, not a training point."""
    if "=" not in text:
        return False
    if "(" in text and _CALL_WITH_KWARGS.search(text):
        return True
    return len(_NON_NUMERIC_ASSIGN.findall(text)) >= 2


def scan(text: str) -> Dict[str, Number]:
    """Every ``key value`` pair in free text, under canonical names; the first of a name wins."""
    if "_step=" in text:
        text = _SLASH_BETWEEN_PAIRS.sub(", ", text)
    values: Dict[str, Number] = {}
    pos = 0
    last = ""  # the last measurement read: a bare split word after it names its other split
    while True:
        m = _KV.search(text, pos)
        if m is None:
            return values
        name = _name_for(m, text)
        split = _SPLIT_WORDS.get(m.group("key").lower())
        if split is not None and last:
            # "LOSS train 0.44 valid 0.48", "Loss train: 0.35  test: 0.46": the value of the
            # measurement just read, for another split.
            name = normalise(split + "_" + last)
        if name is None:
            # The words may still be the tail of a longer phrase: "number of nan iterations: 0".
            pos = m.end("key")
            continue
        pos = m.end()
        if name in values or name in DROPPED:
            continue
        if m.group("sep") == ":" and m.group("num")[0] == "." and m.group("key")[-1].isdigit():
            continue  # YOLOv5/v7's "mAP@.5:.95" column title is a range of IoU thresholds
        value = to_number(m.group("num").replace(",", ""))
        if value is None:
            continue
        if m.group("frac") and name not in PLAIN_INDEXES:
            continue  # "Downloading 3/10": a count of things, not a metric
        values[name] = value
        base = split_base(name)
        last = base if is_signal(base) and base not in PLAIN_INDEXES else ""


_SPLIT_WORDS = {
    "train": "train", "training": "train", "val": "val", "valid": "val", "validation": "val",
    "eval": "val", "test": "test",
}  # fmt: skip


def split_base(name: str) -> str:
    """``val_loss`` -> ``loss``: the measurement without its split."""
    for prefix in ("val_", "test_"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _name_for(m: re.Match[str], text: str) -> Optional[str]:
    key = m.group("key")
    if "." in key and _FILE_KEY.search(key):
        return None
    unit = m.group("kunit") or m.group("unit") or ""
    suffix = _UNIT_SUFFIX.get(unit.lower(), "")
    if m.group("sep").strip():
        return _with_suffix(normalise(key), suffix)
    # A bare "key value": accept known names only, trying the shortest meaningful tail of a
    # phrase ("validation loss at iteration 1000" -> step), or any key in its own "| k v |" cell.
    words = key.split(" ")
    for i in range(len(words)):
        name = normalise(" ".join(words[i:]))
        if plain_key_allowed(name):
            return _with_suffix(name, suffix)
    if _is_cell(text, m.start(), m.end()):
        return _with_suffix(normalise(key), suffix)
    return None


def _with_suffix(name: str, suffix: str) -> str:
    if not suffix or name.endswith(suffix):
        return name
    return name + suffix


def _is_cell(text: str, start: int, end: int) -> bool:
    """fairseq prints "| loss 2.5 | wps 1234 |": a pair alone between bars is a metric."""
    before = text[:start].rstrip()
    after = text[end:].lstrip()
    return before.endswith("|") and (not after or after.startswith("|"))
