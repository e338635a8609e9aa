"""JSON lines as the agent writes and reads them: one object per line, non-finite numbers as strings."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, Optional

_NON_FINITE = {float("inf"): "inf", float("-inf"): "-inf"}


def _finite_or_name(value: Any) -> Any:
    """JSON has no NaN/Infinity; a diverging run must still show, so they travel as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else _NON_FINITE[value]
    if isinstance(value, dict):
        return {k: _finite_or_name(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_name(v) for v in value]
    return value


# One encoder for every line: json.dumps with options builds a new JSONEncoder per call, which
# was a tenth of the journal writer's time in a flood of metric lines.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def dumps(obj: Any) -> str:
    """One compact line, without its newline."""
    try:
        return _ENCODER.encode(obj)
    except ValueError:
        return _ENCODER.encode(_finite_or_name(obj))


def loads_object(line: str) -> Optional[Dict[str, Any]]:
    """The object on a line, or None when the line is not one JSON object."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
