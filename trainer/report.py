"""The trainer's output: one JSON object per line on stdout, flushed, from rank 0 only.

A line with an `event` key is an event for gpudeck; any other line is a metric point. Non-finite
numbers become the strings "nan", "inf", "-inf" (the journal contract in docs/architecture.md), so every line is valid JSON.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from typing import Any


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


class Reporter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()  # the upload thread reports too: whole lines only

    def line(self, obj: dict[str, Any]) -> None:
        if self.enabled:
            text = json.dumps({k: _clean(v) for k, v in obj.items()}) + "\n"
            with self._lock:
                sys.stdout.write(text)
                sys.stdout.flush()

    def event(self, name: str, **fields: Any) -> None:
        self.line({"event": name, **fields})
