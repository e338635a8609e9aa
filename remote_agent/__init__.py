"""gpudeck's agent: runs where the GPUs are, with python3 >= 3.8 and the standard library only."""

from __future__ import annotations

VERSION = "0.1.0"
PROTOCOL = 1
