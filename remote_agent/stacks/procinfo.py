"""What a dump says of each process: its command, whether it runs Python, and the rank torchrun (or
any launcher) gave it, all read from /proc. A process that ends meanwhile reads as empty."""

from __future__ import annotations

import os
from typing import Dict, Optional

from ..probes.procs import MAX_COMMAND, command_line

RANK_VARS = ("RANK", "LOCAL_RANK", "GROUP_RANK")


def command(pid: int) -> str:
    """One line: a `python -c` program has newlines."""
    return " ".join(command_line(pid).split())[:MAX_COMMAND]


def is_python(pid: int) -> bool:
    """Its executable is a CPython/PyPy interpreter (`python3.11`, a venv's `python`, `pypy3`)."""
    try:
        exe = os.path.basename(os.readlink("/proc/%d/exe" % pid))
    except OSError:  # another user's process, or gone: judged by its command's first word
        exe = os.path.basename(command(pid).split(" ", 1)[0])
    return exe.startswith(("python", "pypy"))


def ranks(pid: int) -> Dict[str, str]:
    """RANK / LOCAL_RANK / GROUP_RANK from its environment (what torchrun sets per worker)."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return {}
    found = {}
    for entry in entries:
        name, _, value = entry.partition(b"=")
        text = name.decode("ascii", "replace")
        if text in RANK_VARS and 0 < len(value) <= 12:
            found[text.lower()] = value.decode("ascii", "replace")
    return found


def rank_label(found: Dict[str, str]) -> Optional[str]:
    """`rank 1 (local 1, group 0)`, or None for a process no launcher ranked (torchrun itself)."""
    if "rank" not in found:
        return None
    more = ", ".join(
        "%s %s" % (word, found[key])
        for key, word in (("local_rank", "local"), ("group_rank", "group"))
        if key in found
    )
    return "rank %s%s" % (found["rank"], " (%s)" % more if more else "")
