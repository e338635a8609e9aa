"""Per-process CPU % and RSS from /proc, like top/htop: two readings of each process's CPU ticks
`interval` seconds apart. Standard library only; a process that ends between readings is dropped."""

from __future__ import annotations

import os
import time
from typing import Callable, Dict, Iterable, List, Optional

MAX_PROCESSES = 512  # a job's tree is small; a fork bomb must not make an answer of megabytes
MAX_COMMAND = 400  # characters of a command line kept
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _stat(pid: int) -> Optional[List[bytes]]:
    """The fields of /proc/PID/stat after the command name (state first), or None when gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    close = data.rfind(b")")  # comm may hold spaces or ')': the fields follow the last one
    fields = data[close + 2 :].split()
    return fields if len(fields) > 20 else None


def cpu_ticks(pid: int) -> Optional[int]:
    """utime + stime of the process, in clock ticks; None when gone or a zombie."""
    fields = _stat(pid)
    if fields is None or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[11]) + int(fields[12])


def _rss_bytes(pid: int) -> Optional[int]:
    try:
        with open("/proc/%d/statm" % pid, "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None


def command_line(pid: int) -> str:
    """A process's argv joined by spaces (cut to MAX_COMMAND), or "" when it cannot be read."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read(MAX_COMMAND * 4)
    except OSError:
        return ""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return text[:MAX_COMMAND]


def describe(pid: int, cpu_percent: Optional[float]) -> Optional[Dict[str, object]]:
    fields = _stat(pid)
    if fields is None or fields[0] in (b"Z", b"X"):
        return None
    command = command_line(pid)
    if not command:  # a kernel thread or a process without argv: its name in brackets, as ps does
        try:
            with open("/proc/%d/comm" % pid, "rb") as f:
                command = "[%s]" % f.read().strip().decode("utf-8", "replace")
        except OSError:
            command = "?"
    return {
        "pid": pid,
        "ppid": int(fields[1]),
        "command": command,
        "cpu_percent": cpu_percent,
        "rss_bytes": _rss_bytes(pid),
        "threads": int(fields[17]),
    }


def process_table(
    pids: Iterable[int], interval: float = 0.25, sleep: Callable[[float], None] = time.sleep
) -> List[Dict[str, object]]:
    """One row per live process of `pids` (sorted by pid, at most MAX_PROCESSES): pid, ppid, command,
    cpu_percent (100 = one core busy over the interval; None when it could not be measured),
    rss_bytes, threads."""
    wanted = sorted(set(pids))[:MAX_PROCESSES]
    first = {pid: cpu_ticks(pid) for pid in wanted}
    start = time.monotonic()
    sleep(interval)
    elapsed = time.monotonic() - start
    rows = []
    for pid in wanted:
        before, after = first[pid], cpu_ticks(pid)
        percent = None
        if before is not None and after is not None and elapsed > 0:
            percent = round(100.0 * (after - before) / _TICKS / elapsed, 1)
        row = describe(pid, percent)
        if row is not None:
            rows.append(row)
    return rows
