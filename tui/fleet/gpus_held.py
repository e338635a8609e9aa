"""A job's GPUs after its end, as its nodes' agents proved them (remote_agent/gpus/leftover.py):
what is still held (`gpus_held`, shown with `!` in ps/inspect and in the error colour in the TUI)
and what the end's check killed (`gpus_freed`). Pure: no Textual, no IO."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

GIB = 1024


def gib(mem_mib: Any) -> str:
    if not isinstance(mem_mib, int) or isinstance(mem_mib, bool):
        return "memory unknown"
    return f"{mem_mib / GIB:.0f} GiB" if mem_mib >= GIB else f"{mem_mib} MiB"


def held_text(entry: Mapping[str, Any], host: str | None = None) -> str:
    """`GPU 3 still held by PID 4242 (python), 38 GiB`, the host when the job has several, and
    whose it is when it is not the job's."""
    who = entry.get("name") or entry.get("user") or "?"
    where = f" on {host}" if host else ""
    text = f"GPU {entry.get('gpu')}{where} still held by PID {entry.get('pid')} ({who}), {gib(entry.get('mem_mib'))}"
    return text if entry.get("ours", True) else text + " (not the job's: left alone)"


def freed_text(entry: Mapping[str, Any]) -> str:
    who = entry.get("name") or entry.get("user") or "?"
    return f"GPU {entry.get('gpu')}: PID {entry.get('pid')} ({who}), {gib(entry.get('mem_mib'))}, killed after the end"


def per_node(nodes: Iterable[Mapping[str, Any]], key: str) -> list[dict[str, Any]] | None:
    """Every node's `gpus_held`/`gpus_freed` entries, each with its host and node; None: none."""
    out = [
        dict(e, host=n.get("host"), node=n.get("node"))
        for n in nodes
        if isinstance(n.get(key), list)
        for e in n[key]
        if isinstance(e, dict)
    ]
    return out or None


def held_lines(nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    nodes = list(nodes)
    several = len({n.get("host") for n in nodes}) > 1
    return [held_text(e, str(e["host"]) if several else None) for e in per_node(nodes, "gpus_held") or []]
