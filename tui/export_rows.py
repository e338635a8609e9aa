"""The TUI's "export" action (key E): a view's rows written as CSV and JSON side by side, under
the current directory or `[ui] export_dir`, named after the view and the time
(`gpudeck-jobs-20261206-004500.csv` and `.json`). No Textual here: the view hands over plain
rows, a worker thread calls `write`."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Cell = str | float | int | None


def write(view: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]], directory: Path,
          now: float | None = None) -> Path:  # fmt: skip
    """The CSV's path (the JSON is beside it, a list of objects keyed by column); OSError as is."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    stem = directory / f"gpudeck-{view}-{stamp}"
    n = 1
    while stem.with_suffix(".csv").exists() or stem.with_suffix(".json").exists():  # two in one second
        n += 1
        stem = directory / f"gpudeck-{view}-{stamp}-{n}"
    with open(stem.with_suffix(".csv"), "x", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(columns)
        out.writerows(["" if c is None else c for c in row] for row in rows)
    objects = [dict(zip(columns, row, strict=False)) for row in rows]
    with open(stem.with_suffix(".json"), "x", encoding="utf-8") as f:
        json.dump(objects, f, indent=1)
        f.write("\n")
    return stem.with_suffix(".csv")


def job_points(series: dict[str, Any]) -> tuple[list[str], list[list[Cell]]]:
    """A job view's points: every metric's (x, value), x being the step or the seconds (as charted)."""
    rows: list[list[Cell]] = []
    for metric in sorted(series):
        rows.extend([metric, x, y] for x, y in series[metric].points())
    return ["metric", "x", "value"], rows


def fleet_gpus(hosts: dict[str, Any]) -> tuple[list[str], list[list[Cell]]]:
    """The fleet view: one row per GPU of each host (a host without GPUs: one row, its status)."""
    columns = [
        "host",
        "status",
        "gpu",
        "name",
        "util_pct",
        "mem_used_mib",
        "mem_total_mib",
        "temp_c",
        "power_w",
    ]
    rows: list[list[Cell]] = []
    for name in sorted(hosts):
        host = hosts[name]
        if not host.gpus:
            rows.append([name, host.status, None, None, None, None, None, None, None])
        for g in host.gpus:
            rows.append(
                [
                    name,
                    host.status,
                    g.index,
                    g.name,
                    g.util,
                    g.mem_used_mib,
                    g.mem_total_mib,
                    g.temp_c,
                    g.power_w,
                ]
            )
    return columns, rows
