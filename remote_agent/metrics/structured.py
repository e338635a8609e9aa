"""Lines that carry their own names: JSON objects, Python dict reprs, tqdm ``k=v`` postfixes.

JSON is the recommended format and is decoded whole (however long); a line that is a dict repr
(Hugging Face Trainer prints ``{'loss': 2.31, 'grad_norm': tensor(1.2), ...}``) is read pair by
pair, since ``ast.literal_eval`` fails on wrappers and is slow.
"""

from __future__ import annotations

import json
import re
from typing import Dict, Mapping, Optional, Tuple

from .canonical import DROPPED, normalise
from .rules import finalise
from .values import Number, from_json, to_number, unwrap_scalars

Values = Dict[str, Number]

_REPR_PAIR = re.compile(
    r"""['"]([^'"]{1,100})['"]\s*:\s*(?:'([^']{0,64})'|"([^"]{0,64})"|([-+]?[\w.+-]{1,64}))"""
)
_SEPARATORS = re.compile(r"[^a-z0-9]+")
_MAX_DEPTH = 2  # {"train": {"loss": 1}} is read as train/loss; deeper nesting is not a metric


def parse_braced(text: str) -> Optional[Tuple[Optional[Values], bool]]:
    """(values, trusted) of a ``{...}`` line; values None for an event; None when not a dict."""
    if text.startswith("{") and ('"' in text[:3] or text[1:2].strip() == "}"):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            if "event" in obj:
                return None, True
            return _from_mapping(obj), True
    return _from_repr(text)


def from_pairs(pairs: Mapping[str, str]) -> Values:
    """tqdm postfix pairs as printed (``loss=0.123``, ``v_num=3``) under canonical names."""
    values: Values = {}
    for key, text in pairs.items():
        name = normalise(key)
        value = to_number(text)
        if value is not None and name not in DROPPED and name not in values:
            values[name] = value
    return finalise(values)


def _from_mapping(obj: Mapping[str, object]) -> Values:
    if "train_runtime" in obj:
        return _summary({k: from_json(v) for k, v in obj.items()})
    values: Values = {}
    _flatten(obj, "", values, 0)
    return finalise(values)


def _flatten(obj: Mapping[str, object], prefix: str, values: Values, depth: int) -> None:
    for key, item in obj.items():
        key = prefix + str(key)
        if isinstance(item, dict):
            if depth < _MAX_DEPTH:
                _flatten(item, key + "/", values, depth + 1)
            continue
        value = from_json(item)
        if value is None:
            continue
        name = normalise(key)
        # a JSON record's world_size is the job's own statement of its size, kept with the point (an
        # elastic job's chart shows where it changed); in free text it stays an identifier, dropped
        if name and (name not in DROPPED or name == KEPT_IN_JSON) and name not in values:
            values[name] = value


KEPT_IN_JSON = "world_size"


def _from_repr(text: str) -> Optional[Tuple[Optional[Values], bool]]:
    text = unwrap_scalars(text)
    raw: Dict[str, Optional[Number]] = {}
    for key, single, double, bare in _REPR_PAIR.findall(text):
        raw[key] = to_number(single or double or bare)
    if not raw:
        return None
    if "train_runtime" in raw:
        return _summary(raw), True
    values: Values = {}
    for key, value in raw.items():
        name = normalise(key)
        if value is not None and name and name not in DROPPED and name not in values:
            values[name] = value
    return finalise(values), True


def _summary(raw: Mapping[str, Optional[Number]]) -> Values:
    """HF Trainer's end-of-run summary: reported as a summary, its train_loss is no point."""
    values: Values = {"summary": 1}
    for key, value in raw.items():
        if value is not None:
            name = _SEPARATORS.sub("_", key.lower()).strip("_").replace("_per_second", "_per_sec")
            values[name] = value
    return values
