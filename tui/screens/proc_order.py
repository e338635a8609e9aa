"""The process view's order (nvitop's `<`/`>` sort and reverse, its tree): pure functions over the
agents' rows, so the screen only draws what they return."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..actions.procs import ProcRow

_ROLE = {"supervisor": 0, "command": 1, "child": 2, "gpu": 3}


def _gpu_mem(row: ProcRow) -> float:
    return float(sum(m for _, m in row.gpus if m is not None))


# name shown in the status line → the key a row sorts by (biggest first, as nvitop and top show them)
SORTS: tuple[tuple[str, Callable[[ProcRow], Any], bool], ...] = (
    ("node", lambda r: (r.host, r.node, _ROLE.get(r.role, 9), r.pid), False),
    ("GPU mem", _gpu_mem, True),
    ("CPU", lambda r: r.cpu_percent if r.cpu_percent is not None else -1.0, True),
    ("RSS", lambda r: r.rss_bytes if r.rss_bytes is not None else -1, True),
    ("PID", lambda r: r.pid, False),
)


@dataclass(frozen=True)
class Order:
    sort: int = 0  # an index into SORTS
    reverse: bool = False
    tree: bool = False

    def label(self) -> str:
        name, _, big_first = SORTS[self.sort]
        arrow = "↓" if big_first != self.reverse else "↑"
        return f"sort: {name} {arrow}" + (" · tree" if self.tree else "")


def sorted_rows(rows: tuple[ProcRow, ...] | list[ProcRow], order: Order) -> list[ProcRow]:
    _, key, big_first = SORTS[order.sort]
    by_pid = sorted(rows, key=lambda r: (r.host, r.node, r.pid))  # ties stay in pid order (stable)
    return sorted(by_pid, key=key, reverse=big_first != order.reverse)


def arranged(rows: tuple[ProcRow, ...], order: Order) -> list[tuple[ProcRow, str]]:
    """(row, its command's indent) in the order to show: sorted, or as a tree of parent and child
    (siblings sorted; a process whose parent is not shown is a root) with └─ before each child."""
    ordered = sorted_rows(rows, order)
    if not order.tree:
        return [(r, "") for r in ordered]
    shown = {(r.host, r.node, r.pid) for r in rows}
    children: dict[tuple[str, str, int], list[ProcRow]] = {}
    roots: list[ProcRow] = []
    for r in ordered:
        parent = (r.host, r.node, r.ppid) if r.ppid is not None else None
        if parent in shown and parent != (r.host, r.node, r.pid):
            children.setdefault((r.host, r.node, r.ppid or 0), []).append(r)
        else:
            roots.append(r)
    out: list[tuple[ProcRow, str]] = []
    seen: set[tuple[str, str, int]] = set()

    def walk(row: ProcRow, depth: int) -> None:
        me = (row.host, row.node, row.pid)
        if me in seen:  # a pid loop in a reused-pid race: shown once
            return
        seen.add(me)
        out.append((row, "  " * (depth - 1) + "└─ " if depth else ""))
        for child in children.get(me, []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return out
