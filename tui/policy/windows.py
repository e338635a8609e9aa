"""A schedule rule's clock: is a moment inside its window, and when did the current period begin."""

from __future__ import annotations

import datetime as dt

from .rules import Rule


def inside(rule: Rule, now: float) -> bool:
    local = dt.datetime.fromtimestamp(now, rule.zone)
    assert rule.start is not None and rule.end is not None
    return local.weekday() in rule.days and rule.start <= local.time() < rule.end


def period_start(rule: Rule, now: float) -> dt.datetime:
    """The window's start (inside it), else the end of the latest window before `now`: a schedule acts
    once per period, so what another rule did inside the period is not undone until the next edge."""
    assert rule.start is not None and rule.end is not None
    local = dt.datetime.fromtimestamp(now, rule.zone)
    if inside(rule, now):
        return dt.datetime.combine(local.date(), rule.start, rule.zone)
    for back in range(8):
        day = local.date() - dt.timedelta(days=back)
        end = dt.datetime.combine(day, rule.end, rule.zone)
        if day.weekday() in rule.days and end <= local:
            return end
    return dt.datetime.combine(
        local.date() - dt.timedelta(days=8), rule.end, rule.zone
    )  # unreachable: days non-empty


def local_time(rule: Rule, now: float) -> str:
    return dt.datetime.fromtimestamp(now, rule.zone).strftime("%a %H:%M %Z")
