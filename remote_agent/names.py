"""What job ids, names and node names may look like: they become path parts on the host."""

from __future__ import annotations

import re
import time

JOB_ID_RE = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")
JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NODE_RE = re.compile(r"^[A-Za-z0-9._-]{1,32}$")


def new_job_id(now: float | None = None) -> str:
    """Globally unique and time-sortable: UTC second, the 1/256 s within it, then 16 random bits,
    so two jobs made in one second by one client still sort in the order they were made."""
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    import secrets  # here: every supervisor imports this module, few make ids (secrets loads hmac, random)

    return "%s-%02x%s" % (stamp, int((now % 1) * 256), secrets.token_hex(2))


def is_job_id(value: object) -> bool:
    return isinstance(value, str) and bool(JOB_ID_RE.match(value))


def is_job_name(value: object) -> bool:
    return isinstance(value, str) and bool(JOB_NAME_RE.match(value)) and value not in (".", "..")


def is_node(value: object) -> bool:
    return isinstance(value, str) and bool(NODE_RE.match(value)) and value not in (".", "..")
