"""`[ssh] persist`: how long a host's warm connection waits idle, as OpenSSH's ControlPersist reads it."""

from __future__ import annotations

import os
import re

DEFAULT = 600.0  # ten minutes, a usual ControlPersist
ENV = "GPUDECK_SSH_PERSIST"  # wins over config.toml: one run (or a test suite) without warm connections
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_TIME = re.compile(r"(\d+)([smhdw]?)", re.IGNORECASE)


def parse(value: object) -> float:
    """Seconds (0: never keep one). A number of seconds, a time such as "10m" or "1h30m", or
    "no"/"yes" (yes: the default). ValueError names what is accepted."""
    if isinstance(value, bool):
        return DEFAULT if value else 0.0
    if isinstance(value, (int, float)):
        if value < 0 or value != value:
            raise ValueError(f"expected seconds >= 0, got {value!r}")
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("no", "false", "off"):
            return 0.0
        if text in ("yes", "true", "on"):
            return DEFAULT
        parts = _TIME.findall(text)
        if text and "".join(n + u for n, u in parts).lower() == text:
            return float(sum(int(n) * _UNITS[u.lower()] for n, u in parts))
    raise ValueError(f'expected seconds, a time such as "10m" or "1h", or "no"; got {value!r}')


def effective(configured: float) -> float:
    """$GPUDECK_SSH_PERSIST when set, else config.toml's value."""
    value = os.environ.get(ENV)
    if value is None:
        return configured
    try:
        return parse(value)
    except ValueError as exc:
        raise ValueError(f"${ENV}: {exc}") from None
