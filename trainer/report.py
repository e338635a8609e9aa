"""The trainer's output: one JSON object per line on stdout, flushed, from rank 0 only.

A line with an `event` key is an event for gpudeck; any other line is a metric point. Non-finite
numbers become the strings "nan", "inf", "-inf" (the journal contract in docs/architecture.md), so every line is valid JSON.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from typing import Any


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


class OutputClosed(SystemExit):
    """Whoever read stdout is gone (`| head`, a closed pipe): nothing more can be reported, so the run
    ends, saying why on stderr, instead of training blind or hanging in its exit handlers."""

    def __init__(self) -> None:
        super().__init__("trainer: stdout was closed (broken pipe): stopping, nothing more can be reported")


def _drop_stdout() -> None:
    # The interpreter flushes stdout at exit: pointed at /dev/null, that flush cannot fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # the file object itself was closed: nothing left to flush
        pass
    finally:
        os.close(devnull)


class Reporter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()  # the upload thread reports too: whole lines only

    def line(self, obj: dict[str, Any]) -> None:
        if self.enabled:
            text = json.dumps({k: _clean(v) for k, v in obj.items()}) + "\n"
            with self._lock:
                try:
                    sys.stdout.write(text)
                    sys.stdout.flush()
                except (BrokenPipeError, ValueError) as e:  # ValueError: stdout itself was closed
                    self.enabled = False
                    _drop_stdout()
                    raise OutputClosed() from e

    def event(self, name: str, **fields: Any) -> None:
        self.line({"event": name, **fields})
