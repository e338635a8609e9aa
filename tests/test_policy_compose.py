"""Rules compose (issue 32, item 1): every pair of rule kinds, run as a controller would run them
(a pass every 30 s applying each scale and remembering it), never takes turns undoing each other.
The precedence is the README's Policies, "Precedence"."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from tests.test_policy_engine import MONDAY_0900
from tui.cost.catalog import CatalogEntry
from tui.policy.engine import decide
from tui.policy.inputs import Applied, HostInstance, Inputs, JobFacts, Point
from tui.policy.rules import parse

OFFICE = """
[[rule]]
name = "office-hours"
kind = "schedule"
jobs = "yolo*"
between = "09:00-18:00"
timezone = "Asia/Shanghai"
nodes = {inside}
otherwise = 1
"""
GROW = """
[[rule]]
name = "backlog"
kind = "metric"
jobs = "yolo*"
metric = "backlog"
above = {above}
for = "5m"
add = 1
max = 8
cooldown = "10m"
"""
DRAIN = """
[[rule]]
name = "drained"
kind = "metric"
jobs = "yolo*"
metric = "backlog"
below = {below}
for = "5m"
add = -1
cooldown = "10m"
"""
LUNCH = """
[[rule]]
name = "lunch"
kind = "schedule"
jobs = "yolo*"
between = "12:00-13:00"
timezone = "Asia/Shanghai"
nodes = 2
"""
BIGGER = """
[[rule]]
name = "bigger-gpu"
kind = "vertical"
jobs = "yolo*"
auto = true
"""


def entry(kind: str, gpus: int, price: float) -> CatalogEntry:
    return CatalogEntry(
        "aws",
        kind,
        "us-east-1",
        gpus,
        "A10G",
        24,
        4 * gpus,
        16 * gpus,
        price,
        None,
        None,
        "test",
        "2026",
        "2026",
    )


CATALOG = [entry("g5.xlarge", 1, 1.0), entry("g5.12xlarge", 4, 5.0)]


@dataclasses.dataclass
class Run:
    nodes: list[tuple[float, int]]  # (time, node count) after each applied resize
    moves: list[tuple[float, str]]  # (time, instance type) after each vertical move


def simulate(
    text: str,
    backlog: Callable[[float], float],
    start: float,
    minutes: int,
    nodes: int,
    util: float = 50.0,
) -> Run:
    policies = parse(text, Path("policies.toml"))
    memory: dict[tuple[str, str], Applied] = {}
    points: list[Point] = []
    gpu: list[Point] = []
    instance = "g5.xlarge"
    run = Run([(start, nodes)], [])
    t = start
    while t <= start + minutes * 60:
        points.append(Point(t, backlog(t)))
        gpu.append(Point(t, util))
        facts = JobFacts(
            "j",
            "yolo-v8",
            nodes,
            ("gpu-a",),
            metrics={"backlog": list(points)},
            instance=HostInstance("aws", instance, "us-east-1", "on-demand"),
        )
        inputs = Inputs(t, [facts], policies, {("gpu-a", "gpu_util"): list(gpu)}, CATALOG, dict(memory))
        for d in decide(inputs):
            if d.action != "scale":
                continue
            memory[(d.rule, d.job_name)] = Applied(t, d.to, d.period)
            if d.kind == "vertical":
                instance = d.to
                run.moves.append((t, instance))
            else:
                nodes = d.to
                run.nodes.append((t, nodes))
        t += 30
    return run


def reversals(run: Run) -> int:
    """How often the node count turned around (grow then shrink, or shrink then grow)."""
    counts = [n for _, n in run.nodes]
    steps = [b - a for a, b in zip(counts, counts[1:], strict=False) if b != a]
    return sum(1 for a, b in zip(steps, steps[1:], strict=False) if (a > 0) != (b > 0))


def test_schedule_and_a_growing_metric_rule_do_not_take_turns() -> None:
    # inside office hours (2 nodes) a backlog grows the job: the schedule does not pull it back
    start = MONDAY_0900 + 600
    run = simulate(OFFICE.format(inside=2) + GROW.format(above=10000), lambda t: 20000, start, 120, nodes=2)
    counts = [n for _, n in run.nodes]
    assert counts == [2, 3, 4, 5, 6, 7, 8], run.nodes
    assert reversals(run) == 0
    # at the evening edge the schedule sets its count once; the backlog then grows it again from there
    evening = MONDAY_0900 + 9 * 3600  # 18:00
    late = simulate(OFFICE.format(inside=2) + GROW.format(above=10000), lambda t: 20000, evening, 60, nodes=8)
    assert [n for _, n in late.nodes][:3] == [8, 1, 2], late.nodes
    assert reversals(late) == 1  # the edge itself, and no more


def test_schedule_is_a_floor_a_shrinking_metric_rule_stops_at() -> None:
    start = MONDAY_0900 + 600
    text = OFFICE.format(inside=4) + DRAIN.format(below=1000)
    run = simulate(text, lambda t: 0, start, 120, nodes=4)
    assert run.nodes == [(start, 4)], run.nodes  # the drain rule stops at the schedule's 4
    policies = parse(text, Path("p.toml"))
    points = [Point(start - 600 + 30 * i, 0) for i in range(21)]
    [_, drained] = decide(Inputs(start, [JobFacts("j", "yolo-v8", 4, ("h",), {"backlog": points})], policies))
    assert "at its bound (the floor of schedule 'office-hours', 4)" in drained.reason


def test_two_metric_rules_pulling_opposite_ways_neither_acts() -> None:
    # overlapping thresholds: at 150 both "above 100 → +1" and "below 200 → -1" hold
    text = GROW.format(above=100) + DRAIN.format(below=200)
    run = simulate(text, lambda t: 150, MONDAY_0900, 180, nodes=3)
    assert run.nodes == [(MONDAY_0900, 3)], run.nodes
    # where only one holds, it acts
    grown = simulate(text, lambda t: 500, MONDAY_0900, 30, nodes=3)
    assert [n for _, n in grown.nodes][:2] == [3, 4]


def test_two_metric_rules_growing_wait_for_each_others_cooldown() -> None:
    text = GROW.format(above=100) + GROW.format(above=50).replace('"backlog"\nkind', '"backlog2"\nkind', 1)
    run = simulate(text, lambda t: 500, MONDAY_0900, 60, nodes=1)
    times = [t for t, _ in run.nodes[1:]]
    assert len(times) >= 2 and all(b - a >= 600 for a, b in zip(times, times[1:], strict=False)), run.nodes


def test_overlapping_schedules_and_a_metric_rule_change_at_edges_only() -> None:
    text = OFFICE.format(inside=4) + LUNCH + GROW.format(above=10000)
    start = MONDAY_0900 + 2 * 3600  # 11:00, two hours across lunch
    run = simulate(text, lambda t: 20000 if t > start + 3 * 3600 else 0, start, 150, nodes=4)
    assert [n for _, n in run.nodes] == [4, 2, 4], run.nodes  # 12:00 lunch, 13:00 office hours again
    assert reversals(run) == 1


def test_vertical_and_metric_rules_one_resize_per_pass_and_no_move_back() -> None:
    text = GROW.format(above=10000) + BIGGER
    run = simulate(text, lambda t: 20000, MONDAY_0900, 60, nodes=1, util=99.0)
    # the first pass both hold: the metric rule (first in the file) resizes, the move is deferred; a
    # two-node job then stays a proposal, never moved and never moved back
    assert run.moves == [] and [n for _, n in run.nodes][:2] == [1, 2] and reversals(run) == 0
    alone = simulate(BIGGER, lambda t: 0, MONDAY_0900, 60, nodes=1, util=99.0)
    assert [kind for _, kind in alone.moves] == ["g5.12xlarge"]  # once; nothing larger after it


def test_vertical_and_schedule_rules_move_once_and_keep_the_schedules_count() -> None:
    text = OFFICE.format(inside=1) + BIGGER
    run = simulate(text, lambda t: 0, MONDAY_0900 + 60, 60, nodes=1, util=99.0)
    assert [kind for _, kind in run.moves] == ["g5.12xlarge"] and run.nodes == [(MONDAY_0900 + 60, 1)]


def test_a_growing_rule_keeps_its_own_max_under_a_higher_schedule_floor() -> None:
    # the schedule asks 4 and has not acted yet; the backlog rule (max 3) grows 2 → 3, never to 4
    text = GROW.format(above=10000).replace("max = 8", "max = 3") + OFFICE.format(inside=4)
    policies = parse(text, Path("p.toml"))
    now = MONDAY_0900 + 3600
    points = [Point(now - 600 + 30 * i, 20000) for i in range(21)]
    facts = JobFacts("j", "yolo-v8", 2, ("h",), {"backlog": points})
    backlog = next(d for d in decide(Inputs(now, [facts], policies)) if d.rule == "backlog")
    assert (backlog.action, backlog.to) == ("scale", 3)
