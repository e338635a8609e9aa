"""Journal lines of metric records, many at a time: one JSON encoder call for a whole burst.

A flood of metric lines spent most of the journal writer's time entering the JSON encoder once
per record. A metric point is a flat object (canonical names, numbers, "nan"/"inf" strings), so a
burst of them is encoded as one JSON array and cut at the "},{" between its objects; the cut is
checked (exactly one cut per pair of neighbours, so no string held one) and anything unusual falls
back to the record-by-record encoder. The lines are byte for byte those ``bounded_line`` writes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .jsonio import dumps

METRIC_LINE_LIMIT = (64 << 10) // 4  # longer points go through bounded_line, which cuts them


def encode_points(points: List[Dict[str, Any]]) -> Optional[List[str]]:
    """The JSON text of each point, from one encoder call; None when it cannot be cut safely."""
    if not points:
        return []
    try:
        text = dumps(points)
    except (TypeError, ValueError):
        return None
    if len(points) == 1:
        return [text[1:-1]]
    parts = text[2:-2].split("},{")
    if len(parts) != len(points):
        return None  # a "},{" inside a value: not a flat point
    return ["{" + part + "}" for part in parts]


def metric_line(seq: int, t_text: str, values_text: str) -> Optional[str]:
    """A metric record's line, as bounded_line would write it; None when it must be bounded."""
    if len(values_text) > METRIC_LINE_LIMIT:
        return None
    return '{"seq":%d,"t":%s,"kind":"metric","values":%s}' % (seq, t_text, values_text)
