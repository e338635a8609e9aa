"""One dump of a job's node: every Python process of its live tree, by py-spy where the host has it,
else by the faulthandler route; each stack named by its rank and process; those neither route
reaches listed with why. Saved as `dumps/<UTC time>.txt` (0600, dir 0700) in the node's directory."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..storage.files import ensure_private_dir, open_private
from . import faultroute, pyspy
from .notes import dumps_dir
from .procinfo import command, is_python, rank_label, ranks

SPY_AT_ONCE = 8  # py-spy runs at a time
MAX_PROCESSES = 64  # a job's Python processes on one node (8 GPUs × a few loader workers)


def take_dump(node_dir: Path, job: str, node: str, pids: Iterable[int]) -> Dict[str, Any]:
    """The dump's record (what the `dump` op answers; `text` is the saved file's content)."""
    stacks: List[Dict[str, Any]] = []
    unreached: List[Dict[str, Any]] = []
    python: List[int] = []
    for pid in sorted(pids):
        if not is_python(pid):
            unreached.append(_process(pid, why="not a Python process"))
        elif len(python) >= MAX_PROCESSES:
            unreached.append(_process(pid, why="over %d Python processes: not dumped" % MAX_PROCESSES))
        else:
            python.append(pid)
    py_spy = pyspy.find()
    fallback: List[int] = []
    tried: Dict[int, str] = {}
    spied = _spy_all(py_spy, python) if py_spy is not None else {}
    for pid in python:
        if py_spy is not None:
            text, why = spied[pid]
            if text is not None:
                stacks.append(_process(pid, route="py-spy", text=text))
                continue
            tried[pid] = why
        if faultroute.catches(pid):
            fallback.append(pid)
        else:
            reason = "no py-spy on this host (pip install py-spy)" if py_spy is None else tried[pid]
            unreached.append(_process(pid, why="%s; does not catch SIGURG (no faulthandler opt-in)" % reason))
    for pid, (text, why) in faultroute.take(node_dir, fallback).items():
        if text is not None:
            stacks.append(_process(pid, route="faulthandler", text=text))
        else:
            unreached.append(_process(pid, why="; ".join(w for w in (tried.get(pid), why) if w)))
    stacks.sort(key=_rank_order)
    t = time.time()
    record: Dict[str, Any] = {
        "job": job,
        "node": node,
        "host": _hostname(),
        "t": t,
        "stacks": stacks,
        "unreached": unreached,
        "counts": {"stacks": len(stacks), "unreached": len(unreached)},
        "py_spy": py_spy is not None,
    }
    text = record["text"] = render(record)
    record["path"] = save(node_dir, text, t)
    return record


def _spy_all(py_spy: str, pids: List[int]) -> Dict[int, Tuple[Optional[str], str]]:
    """py-spy on every process at once (each pauses only its own process while it reads)."""
    from concurrent.futures import ThreadPoolExecutor  # here: a supervisor that never dumps stays light

    with ThreadPoolExecutor(max_workers=max(1, min(SPY_AT_ONCE, len(pids)))) as pool:
        futures = {pid: pool.submit(pyspy.dump, py_spy, pid) for pid in pids}
        return {pid: future.result() for pid, future in futures.items()}


def _process(pid: int, **more: Any) -> Dict[str, Any]:
    found = ranks(pid)
    entry: Dict[str, Any] = {"pid": pid, "command": command(pid), "label": rank_label(found)}
    for key in ("rank", "local_rank", "group_rank"):
        value = found.get(key, "")
        entry[key] = int(value) if value.isdigit() else None
    entry.update(more)
    return entry


def _rank_order(entry: Dict[str, Any]) -> Tuple[int, int, int]:
    rank = entry.get("rank")
    return (0, rank, entry["pid"]) if isinstance(rank, int) else (1, 0, entry["pid"])


def render(record: Dict[str, Any]) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record["t"]))
    counts = record["counts"]
    lines = [
        "gpudeck dump: job %s, node %s, on %s, at %s" % (record["job"], record["node"], record["host"], when),
        "%d stack(s), %d process(es) not reached" % (counts["stacks"], counts["unreached"]),
        "",
    ]
    for entry in record["stacks"]:
        who = entry["label"] or "no rank"
        lines.append(
            "=== %s · pid %d · %s · %s" % (who, entry["pid"], entry["command"] or "?", entry["route"])
        )
        lines.extend(entry["text"].rstrip("\n").splitlines())
        lines.append("")
    if record["unreached"]:
        lines.append("=== not reached")
        for entry in record["unreached"]:
            lines.append("pid %d · %s: %s" % (entry["pid"], entry["command"] or "?", entry["why"]))
    return "\n".join(lines).rstrip("\n") + "\n"


def save(node_dir: Path, text: str, t: float) -> str:
    """dumps/<UTC time>.txt; the path as the host names it."""
    directory = ensure_private_dir(dumps_dir(node_dir))
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)
    path = directory / ("%s.txt" % stamp)
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    data = text.encode("utf-8", "replace")
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)
    return str(path)


def latest(node_dir: Path) -> Optional[Path]:
    """The newest saved dump (names sort by time), or None."""
    try:
        names = sorted(n for n in os.listdir(str(dumps_dir(node_dir))) if n.endswith(".txt"))
    except OSError:
        return None
    return dumps_dir(node_dir) / names[-1] if names else None


def _hostname() -> str:
    import socket  # here: every supervisor imports this module, few ever say their host's name

    return socket.gethostname()
