"""A multi-line Python script as one `-c` argument that any login shell passes on intact."""

from __future__ import annotations

import base64


def python_one_line(script: str) -> str:
    """A tcsh login shell refuses a quoted newline, and fish reads backslashes inside quotes: the
    script travels base64-encoded, in one word of the base64 alphabet."""
    return f"import base64; exec(base64.b64decode('{base64.b64encode(script.encode()).decode()}'))"
