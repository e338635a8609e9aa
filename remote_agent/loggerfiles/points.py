"""A Lightning logger's rows as gpudeck points. Lightning logs a training step at the 0-based
index of that step (and validation at the index of the last step before it); gpudeck's step is the
number of steps done, as the bars count and HF logs it: the logger's step + 1. Columns are named as
the parser names them (tbread/names.py: `train_loss`/`train_loss_step` -> loss)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

INDEXES = ("step", "epoch")


def csv_points(rows: List[Dict[str, str]]) -> List[Dict[str, Any]]:
    # here: every supervisor imports INDEXES (gate.py), few read a CSV (the parser's names, csv)
    from ..tbread.names import point_key
    from .csvread import number

    out: List[Dict[str, Any]] = []
    for row in rows:
        step = number(row.get("step"))
        if step is None:
            continue
        values: Dict[str, Any] = {}
        for column, text in row.items():
            value = number(text)
            if value is not None and column not in INDEXES:
                values[point_key(column, "")] = value
        merged(out, int(step), number(row.get("epoch")), values)
    return out


def event_points(points: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """tbread's points (the logger's own step) shifted to steps done."""
    out: List[Dict[str, Any]] = []
    for point in points:
        values = {k: v for k, v in point.items() if k not in INDEXES}
        epoch = point.get("epoch")
        merged(out, int(point["step"]), epoch if isinstance(epoch, (int, float)) else None, values)
    return out


def merged(out: List[Dict[str, Any]], step: int, epoch: Optional[float], values: Dict[str, Any]) -> None:
    """One point per step: Lightning writes a step's train and val values as rows of their own."""
    if not values:
        return
    if out and out[-1]["step"] == step + 1:
        out[-1].update(values)
        return
    point: Dict[str, Any] = {"step": step + 1}
    if epoch is not None and epoch == int(epoch):
        point["epoch"] = int(epoch)
    point.update(values)
    out.append(point)


def series_names(points: List[Dict[str, Any]]) -> List[str]:
    return sorted({k for p in points for k in p if k not in INDEXES})
