"""Instance rules: stop a cloud host's instance when its GPUs sat idle (hosts.toml
`instance_idle_stop = "30m@5%+15m"`: 30 minutes under 5 %, not within 15 minutes of its start), and
stop the running instances when the fleet's daily budget (`[cost] daily_budget`) is reached.

Pure decisions (a view + the rule + the clock → stop / keep / refuse, with the reason and the
inputs) and their journal. Nothing ever stops an instance the user did not opt in: it must carry
the tag gpudeck-managed=true (gpudeck puts it on what it launches; the user may add it).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .. import paths
from .fleet import InstanceView
from .model import TAG_MANAGED, Instance

MAX_LINE = 4096  # a journal line is bounded whatever the inputs


@dataclass(frozen=True)
class IdleStopDecision:
    t: float
    host: str
    instance_id: str
    action: str  # "stop" | "keep" | "refuse"
    reason: str
    inputs: dict[str, Any]


def decide(
    view: InstanceView, host: str, rule: dict[str, float], now: float, held: str | None = None
) -> IdleStopDecision:
    """`held`: why the host is kept for debugging (a failed job's --hold-on-fail), or None."""
    i = view.instance
    window_min, below = rule["minutes"], rule["below_pct"]
    inputs = {
        "rule": {"minutes": window_min, "below_pct": below, "grace_minutes": rule.get("grace_minutes", 0.0)},
        "state": i.state,
        "opted_in": i.opted_in,
        "launch_time": i.launch_time,
        "gpu_util_window_avg": view.util.window_avg,
        "idle_since": view.util.idle_since,
        "gpu_util_source": view.util_source,
        "price_per_hour": view.price.per_hour,
        "currency": view.price.currency,
    }

    def said(action: str, reason: str) -> IdleStopDecision:
        return IdleStopDecision(now, host, i.id, action, reason, inputs)

    if i.state != "running":
        return said("keep", f"{i.state}, not running")
    if not i.opted_in:
        return said("refuse", f"not opted in (tag {TAG_MANAGED}=true): a rule never stops it")
    if held:
        inputs["held"] = held
        return said("keep", held)  # idle because its job failed: the user is debugging on it
    grace = rule.get("grace_minutes", 0.0) * 60
    if i.launch_time is not None and now - i.launch_time < grace:
        return said("keep", f"within {grace / 60:g} min of its start")
    if not view.has_metric:
        return said("keep", view.util_source)
    if view.util.idle:
        return said("stop", f"GPU under {below:g}% for {window_min:g} min (avg {view.util.window_avg:.1f}%)")
    avg = "-" if view.util.window_avg is None else f"{view.util.window_avg:.1f}%"
    return said("keep", f"GPU not under {below:g}% for the whole {window_min:g} min (avg {avg})")


BUDGET_RULE = "fleet daily budget"


def decide_budget(
    instance: Instance,
    host: str | None,
    price: tuple[float | None, str],
    today: float,
    budget: float,
    currency: str,
    now: float,
) -> IdleStopDecision:
    """The fleet's daily budget on one instance: stop it once today's spend reached the budget, if it
    runs and is opted in (gpudeck-managed=true); any other is kept or refused, with the reason."""
    inputs = {
        "rule": BUDGET_RULE,
        "today": round(today, 4),
        "daily_budget": budget,
        "currency": currency,
        "state": instance.state,
        "opted_in": instance.opted_in,
        "price_per_hour": price[0],
        "price_currency": price[1],
    }

    def said(action: str, reason: str) -> IdleStopDecision:
        return IdleStopDecision(now, host or "-", instance.id, action, reason, inputs)

    if today < budget:
        return said("keep", f"today {today:.2f} is under the daily budget {budget:.2f} {currency}")
    if instance.state != "running":
        return said("keep", f"{instance.state}, not running")
    if not instance.opted_in:
        return said("refuse", f"not opted in (tag {TAG_MANAGED}=true): a rule never stops it")
    return said("stop", f"fleet daily budget reached: today {today:.2f} of {budget:.2f} {currency}")


def journal_path() -> Path:
    return paths.data_dir() / "cloud-rules.jsonl"


def journal(decision: IdleStopDecision, outcome: str) -> None:
    """One JSON line per decision with its inputs and what came of it (owner-only file, appended)."""
    record = {**asdict(decision), "outcome": outcome}
    line = json.dumps(record, sort_keys=True)
    if len(line) > MAX_LINE:
        record["inputs"] = {"cut": True}
        line = json.dumps(record, sort_keys=True)[:MAX_LINE]
    path = journal_path()
    paths.ensure_private(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def read_journal() -> list[dict[str, Any]]:
    """Every readable record; a damaged line is skipped."""
    out = []
    try:
        text = journal_path().read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out
