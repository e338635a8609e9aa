"""The one engine: inputs (job series, host samples, clock, sizes, catalog, memory) → decisions with
reasons and the inputs that drove them. Pure: no IO, no clock of its own (tests pass one).

Flapping is prevented three ways: a metric condition must hold for the whole `for` (an oscillating
metric never does), a metric rule waits `cooldown` after the job's last resize by any metric or
schedule rule, and a schedule acts once per window period. Rules compose by one precedence (the
README's Policies, "Precedence"): the schedule in force sets a job's count at its period's edge and
is a floor until the next edge — metric rules move the job above it (never below it), and the
schedule does not pull back what a metric rule grew in its period. Per job, at most one decision
scales it in one pass (the first in file order); the others say they were deferred.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..format import money
from . import windows
from .bigger import next_larger
from .durations import show
from .inputs import Inputs, JobFacts, Point
from .rules import HOST_METRICS, Rule

# What a decision does: `scale` (to another node count; vertical: onto a host of the bigger type),
# `propose` (auto = false, or a vertical change that would not restart cleanly),
# `refused` (the budget says no), `none` (nothing to do now; the reason says why).
ACTIONS = ("scale", "propose", "refused", "none")
HORIZON_H = 1.0  # a scale up must be payable for this many hours at the new burn


@dataclass(frozen=True)
class Decision:
    rule: str
    kind: str
    job_id: str
    job_name: str
    frm: Any  # node count, or instance type for vertical
    to: Any
    action: str
    reason: str
    inputs: dict[str, Any] = field(default_factory=dict)
    period: str | None = None  # a schedule decision's window period

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "kind": self.kind,
            "job": {"id": self.job_id, "name": self.job_name},
            "from": self.frm,
            "to": self.to,
            "action": self.action,
            "reason": self.reason,
            "inputs": self.inputs,
        }


def decide(inputs: Inputs) -> list[Decision]:
    out: list[Decision] = []
    for job in inputs.jobs:
        rules = _matching(job, inputs)
        winner = _schedule_winner([r for r in rules if r.kind == "schedule"], inputs.now)
        decisions = []
        for rule in rules:
            if rule.kind == "schedule" and rule is not winner:
                assert winner is not None
                decisions.append(_decision(rule, job, job.nodes, "none", _deferred_to(winner, rule, inputs)))
            else:
                decisions.append(_KINDS[rule.kind](rule, job, inputs))
        out.extend(_one_scale_per_job(decisions))
    return out


def _deferred_to(winner: Rule, rule: Rule, inputs: Inputs) -> str:
    """Why another schedule decides now, in the file's true order (the winner may be listed earlier)."""
    order = inputs.policies.rules
    where = "later" if order.index(winner) > order.index(rule) else "earlier"
    if windows.inside(winner, inputs.now):
        why = "its window is open" + (", and it is listed later" if where == "later" else "")
    elif winner.otherwise is not None:
        why = "no window is open and it is the last that asks a count outside its window"
    else:
        why = "no window is open and it is listed last"
    return f"rule {winner.name!r} (listed {where}) decides this job's schedule now: {why}"


def _schedule_winner(schedules: list[Rule], now: float) -> Rule | None:
    """The later-listed rule wins where windows overlap; outside every window, the last with an `otherwise`."""
    active = [r for r in schedules if windows.inside(r, now)]
    if active:
        return active[-1]
    asking = [r for r in schedules if r.otherwise is not None]
    return asking[-1] if asking else (schedules[-1] if schedules else None)


def _matching(job: JobFacts, inputs: Inputs) -> list[Rule]:
    return [r for r in inputs.policies.rules if r.matches(job.name, list(job.hosts), inputs.policies.pools)]


def _floor(job: JobFacts, inputs: Inputs) -> tuple[int, str] | None:
    """(the node count the schedule in force asks now, its name): metric rules never go below it."""
    winner = _schedule_winner([r for r in _matching(job, inputs) if r.kind == "schedule"], inputs.now)
    if winner is None:
        return None
    want = winner.nodes if windows.inside(winner, inputs.now) else winner.otherwise
    return None if want is None else (want, winner.name)


def _last_resize(job: JobFacts, inputs: Inputs) -> tuple[str, Any] | None:
    """(rule, Applied) of the job's latest resize by a metric or schedule rule (cooldowns count from it)."""
    resizers = [r.name for r in _matching(job, inputs) if r.kind in ("metric", "schedule")]
    found = [(n, inputs.memory[(n, job.name)]) for n in resizers if (n, job.name) in inputs.memory]
    return max(found, key=lambda f: f[1].t) if found else None


def _one_scale_per_job(decisions: list[Decision]) -> list[Decision]:
    first: Decision | None = None
    out = []
    for d in decisions:
        if d.action == "scale" and first is not None:
            d = replace(
                d, action="none", reason=f"{d.reason}; deferred: rule {first.rule!r} resizes this job first"
            )
        elif d.action == "scale":
            first = d
        out.append(d)
    return out


_NODES = object()  # `from` is the job's node count (vertical rules pass an instance type, maybe None)


def _decision(
    rule: Rule, job: JobFacts, to: Any, action: str, reason: str, frm: Any = _NODES, **inputs: Any
) -> Decision:
    return Decision(
        rule.name,
        rule.kind,
        job.id,
        job.name,
        job.nodes if frm is _NODES else frm,
        to,
        action,
        reason,
        {"nodes": job.nodes, **inputs},
    )


def _act(rule: Rule, job: JobFacts, inputs: Inputs, to: int, reason: str, **values: Any) -> Decision:
    """A resize decision, after the cooldown, the budget and `auto` had their say."""
    last = _last_resize(job, inputs) if rule.cooldown else None
    if last is not None and inputs.now - last[1].t < rule.cooldown:
        by = "applied" if last[0] == rule.name else f"resized by rule {last[0]!r}"
        return _decision(
            rule,
            job,
            job.nodes,
            "none",
            f"{reason}; cooling down: {by} {show(inputs.now - last[1].t)} "
            f"ago (cooldown {show(rule.cooldown)})",
            **values,
        )
    refusal = _budget_refusal(job, inputs, to)
    if refusal:
        return _decision(rule, job, to, "refused", f"{reason}; refused: {refusal}", **values)
    return _decision(rule, job, to, "scale" if rule.auto else "propose", reason, **values)


def _budget_refusal(job: JobFacts, inputs: Inputs, to: int) -> str | None:
    """A scale up must be payable for one more hour by the job's budget and the fleet's day budget."""
    if to <= job.nodes:
        return None
    cur = inputs.currency
    if (
        inputs.fleet_budget_left is not None and inputs.fleet_budget_left <= 0
    ):  # spent, whatever the job costs
        return f"the fleet's daily budget is spent ({money(-inputs.fleet_budget_left, cur)} over)"
    if job.burn_per_node is None:
        return None
    burn = job.burn_per_node * to
    if job.budget_left is not None and job.budget_left < burn * HORIZON_H:
        return (
            f"the job's budget has {money(job.budget_left, cur)} left, less than one hour at {to} nodes "
            f"({money(burn, cur, '/h')})"
        )
    extra = job.burn_per_node * (to - job.nodes)
    fleet_burn = (inputs.fleet_burn or 0) + extra
    if inputs.fleet_budget_left is not None and inputs.fleet_budget_left < fleet_burn * HORIZON_H:
        return (
            f"the fleet's daily budget has {money(inputs.fleet_budget_left, cur)} left, less than one hour at "
            f"{money(fleet_burn, cur, '/h')}"
        )
    return None


# -- metric ----------------------------------------------------------------------------------------


def _series(rule: Rule, job: JobFacts, inputs: Inputs) -> tuple[dict[str, list[Point]], str]:
    """The series to test, by source: the job's own metric, or each host's GPU figure."""
    if rule.metric in HOST_METRICS:
        # the job's own GPU summaries (its journals) where there are any, else the host's samples
        return {
            h: list(job.gpu.get((h, rule.metric)) or inputs.host_series.get((h, rule.metric), []))
            for h in job.hosts
        }, "host"
    return {"job": list(job.metrics.get(rule.metric, []))}, "job"


def held(points: list[Point], now: float, hold: float, test: Any) -> tuple[bool | None, str, float | None]:
    """(held?, why, latest value): every point in (now-hold, now] and the value in force at now-hold
    pass `test`. None: not enough data to say (no point, or none old enough)."""
    points = sorted((p for p in points if p.t <= now), key=lambda p: p.t)
    if not points:
        return None, "no data", None
    start = now - hold
    before = [p for p in points if p.t <= start]
    if hold and not before:
        return None, f"seen for {show(now - points[0].t)} only (needs {show(hold)})", points[-1].value
    window = ([before[-1]] if before else []) + [p for p in points if p.t > start]
    if not hold:
        window = points[-1:]
    failing = [p for p in window if not test(p.value)]
    if failing:
        return False, f"{failing[-1].value:g} at {show(now - failing[-1].t)} ago", points[-1].value
    return True, f"for {show(hold)}" if hold else "now", points[-1].value


def _condition(rule: Rule, job: JobFacts, inputs: Inputs) -> tuple[bool | None, str, dict[str, Any]]:
    above, below = rule.above, rule.below
    word, limit = (">", above) if above is not None else ("<", below)
    assert limit is not None
    test = (lambda v: v > limit) if above is not None else (lambda v: v < limit)
    series, source = _series(rule, job, inputs)
    results = {name: held(points, inputs.data_now, rule.hold, test) for name, points in series.items()}
    values = {name: r[2] for name, r in results.items()}
    shown = values["job"] if source == "job" else values
    facts = {"metric": rule.metric, "value": shown, "threshold": f"{word} {limit:g}", "for": show(rule.hold)}
    label = f"{rule.metric} {word} {limit:g}"
    if not series:
        return None, f"{rule.metric}: the job has no hosts", facts
    unknown = [(n, r) for n, r in results.items() if r[0] is None]
    if unknown:
        name, r = unknown[0]
        where = "" if source == "job" else f" on {name}"
        return (
            None,
            f"{rule.metric}{where}: {r[1]}{' (no data is not 0)' if r[1] == 'no data' else ''}",
            facts,
        )
    failing = [(n, r) for n, r in results.items() if not r[0]]
    if failing:
        name, r = failing[0]
        where = "" if source == "job" else f" on {name}"
        return False, f"{label} has not held for {show(rule.hold)}{where}: {r[1]}", facts
    now_text = ", ".join(f"{v:g}" for v in values.values() if v is not None)
    return True, f"{label} {results[next(iter(results))][1]} ({rule.metric} {now_text} now)", facts


def _metric(rule: Rule, job: JobFacts, inputs: Inputs) -> Decision:
    ok, why, facts = _condition(rule, job, inputs)
    if not ok:
        return _decision(rule, job, job.nodes, "none", why, **facts)
    against = _opposed(rule, job, inputs)
    if against:
        return _decision(
            rule,
            job,
            job.nodes,
            "none",
            f"{why}; rule {against!r} holds too and pulls the other way: neither acts",
            **facts,
        )
    floor = _floor(job, inputs) if rule.add < 0 else None  # a shrinking rule stops at the schedule's count
    low = max(rule.min, floor[0]) if floor else rule.min
    target = job.nodes + rule.add
    target = max(low, target if rule.max is None else min(rule.max, target))
    if target == job.nodes or (rule.add > 0) != (target > job.nodes):
        if rule.add > 0:
            bound = f"max {rule.max}"
        elif floor and floor[0] > rule.min:
            bound = f"the floor of schedule {floor[1]!r}, {floor[0]}"
        else:
            bound = f"min {rule.min}"
        return _decision(rule, job, job.nodes, "none", f"{why}; at its bound ({bound})", **facts)
    return _act(
        rule,
        job,
        inputs,
        target,
        f"{why} → {'+' if rule.add > 0 else ''}{rule.add} node{'s' * (abs(rule.add) != 1)}",
        **facts,
    )


def _opposed(rule: Rule, job: JobFacts, inputs: Inputs) -> str | None:
    """Another metric rule on this job whose condition holds now and that moves it the other way
    (two such rules would take turns undoing each other)."""
    for other in _matching(job, inputs):
        opposite = other.kind == "metric" and other is not rule and (other.add > 0) != (rule.add > 0)
        if opposite and _condition(other, job, inputs)[0]:
            return other.name
    return None


# -- schedule --------------------------------------------------------------------------------------


def _schedule(rule: Rule, job: JobFacts, inputs: Inputs) -> Decision:
    now = inputs.now
    inside = windows.inside(rule, now)
    period = windows.period_start(rule, now).isoformat()
    when = windows.local_time(rule, now)
    facts = {
        "local_time": when,
        "inside": inside,
        "window": f"{rule.start:%H:%M}-{rule.end:%H:%M}",
        "timezone": rule.timezone,
        "period": period,
    }
    want = rule.nodes if inside else rule.otherwise
    if want is None:
        return _decision(
            rule, job, job.nodes, "none", f"{when}: outside its window; it asks nothing then", **facts
        )
    where = "inside" if inside else "outside"
    reason = f"{when}: {where} {facts['window']} → {want} node{'s' * (want != 1)}"
    memory = inputs.memory.get((rule.name, job.name))
    if memory is not None and memory.period == period:
        return _decision(rule, job, job.nodes, "none", f"{reason}; already set this period", **facts)
    if want == job.nodes:
        return _decision(rule, job, job.nodes, "none", f"{reason}; it has them", **facts)
    grown = _grown_in_period(rule, job, inputs, windows.period_start(rule, now).timestamp())
    if want < job.nodes and grown:
        return _decision(
            rule,
            job,
            job.nodes,
            "none",
            f"{reason}; rule {grown!r} grew it in this period: the schedule is a floor until its next edge",
            **facts,
        )
    d = _act(rule, job, inputs, want, reason, **facts)
    return replace(d, period=period)


def _grown_in_period(rule: Rule, job: JobFacts, inputs: Inputs, start: float) -> str | None:
    """A metric rule that resized this job since the schedule's period began (its count stays)."""
    for r in _matching(job, inputs):
        applied = inputs.memory.get((r.name, job.name))
        if r.kind == "metric" and applied is not None and applied.t >= start:
            return r.name
    return None


# -- vertical --------------------------------------------------------------------------------------


def _vertical(rule: Rule, job: JobFacts, inputs: Inputs) -> Decision:
    inst = job.instance
    kind = inst.instance_type if inst and inst.instance_type else None
    ok, why, facts = _condition(rule, job, inputs)
    if not ok:
        return _decision(rule, job, kind, "none", why, frm=kind, **facts)
    if inst is None or not inst.provider or not kind:
        return _decision(
            rule,
            job,
            None,
            "none",
            f"{why}; {job.hosts[0]} has no provider/instance_type "
            f"(`gpudeck hosts set {job.hosts[0]} provider=… instance_type=…`)",
            frm=None,
            **facts,
        )
    p = next_larger(inputs.catalog, inst.provider, kind, inst.region, inst.market)
    if p.current is None:
        return _decision(
            rule,
            job,
            kind,
            "none",
            f"{why}; {inst.provider} {kind} is not in the price catalog",
            frm=kind,
            **facts,
        )
    if p.next is None:
        return _decision(
            rule,
            job,
            kind,
            "none",
            f"{why}; no larger {p.family} type in the catalog (a family change is yours to choose)",
            frm=kind,
            **facts,
        )
    diff = p.difference
    price = (
        f"{'+' if diff >= 0 else '-'}${abs(diff):.3f}/h {p.market} (${p.price_now:g} → ${p.price_next:g})"
        if diff is not None
        else f"price difference unknown (no {p.market} list price in the catalog)"
    )
    notes = []
    if p.market == "spot":
        notes.append("spot: a new spot request, it may be reclaimed; prices are the catalog's spot low")
    if p.next.gpu_model != p.current.gpu_model:
        notes.append(f"GPU model changes: {p.current.gpu_model or '?'} → {p.next.gpu_model or '?'}")
    facts.update(
        family=p.family,
        price_difference_usd_per_hour=diff,
        market=p.market,
        gpus=f"{p.current.gpus or '?'} → {p.next.gpus or '?'}",
    )
    reason = "; ".join([f"{why} → {p.next.instance_type}, {price}", *notes])
    memory = inputs.memory.get((rule.name, job.name))
    # within the cooldown: the same proposal is not made again, nor a move right after one (to = this type)
    if (
        memory is not None
        and rule.cooldown
        and inputs.now - memory.t < rule.cooldown
        and memory.to in (p.next.instance_type, kind)
    ):
        done = "moved here" if memory.to == kind else "proposed"
        return _decision(
            rule, job, kind, "none", f"{reason}; {done} {show(inputs.now - memory.t)} ago", frm=kind, **facts
        )
    refusal = _vertical_refusal(job, inputs, diff)
    if refusal:
        return _decision(
            rule, job, p.next.instance_type, "refused", f"{reason}; refused: {refusal}", frm=kind, **facts
        )
    held_back = _not_clean(job, p)
    facts["restart"] = held_back or "clean"  # whoever accepts the proposal (policy run, the TUI's y) reads it
    if not rule.auto:
        return _decision(rule, job, p.next.instance_type, "propose", reason, frm=kind, **facts)
    if held_back:
        return _decision(
            rule,
            job,
            p.next.instance_type,
            "propose",
            f"{reason}; stays a proposal: {held_back}",
            frm=kind,
            **facts,
        )
    return _decision(rule, job, p.next.instance_type, "scale", reason, frm=kind, **facts)


def _not_clean(job: JobFacts, p: Any) -> str | None:
    """Why the job would not restart cleanly on the bigger type (auto = true applies only where it would)."""
    if p.market == "spot":
        return "a spot instance may be reclaimed under the restarted job"
    if p.next.gpu_model != p.current.gpu_model:
        return f"the GPU model changes ({p.current.gpu_model or '?'} → {p.next.gpu_model or '?'})"
    if job.nodes != 1:
        return f"a {job.nodes}-node job (only one-node jobs are moved)"
    return None


def _vertical_refusal(job: JobFacts, inputs: Inputs, diff: float | None) -> str | None:
    """A bigger type is proposed only if the fleet's day budget can pay one more hour of the difference
    (catalog prices are USD: compared only when the budget is in USD; a spent budget refuses in any)."""
    left, cur = inputs.fleet_budget_left, inputs.currency
    if left is None:
        return None
    if left <= 0:
        return f"the fleet's daily budget is spent ({money(-left, cur)} over)"
    if diff is None or diff <= 0 or cur != "USD":
        return None
    burn = (inputs.fleet_burn or 0.0) + diff * job.nodes
    if left < burn * HORIZON_H:
        return f"the fleet's daily budget has {money(left, cur)} left, less than one hour at {money(burn, cur, '/h')}"
    return None


_KINDS = {"metric": _metric, "schedule": _schedule, "vertical": _vertical}
