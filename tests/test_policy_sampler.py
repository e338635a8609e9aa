"""The TUI's engine inputs from the Fleet model: each pass samples what a job printed last and its
hosts' mean GPU readings with the pass's time; series stay bounded; ended jobs are dropped."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tui.fleet import Fleet
from tui.fleet.costs import CostBoard, JobCostShown
from tui.policy.engine import decide
from tui.policy.from_fleet import Sampler, with_costs
from tui.policy.inputs import Inputs, Point, append_bounded
from tui.policy.rules import parse

RULES = parse(
    '[[rule]]\nname = "b"\nkind = "metric"\njobs = "*"\nmetric = "backlog"\nabove = 10000\nfor = "1m"\n'
    'add = 1\nmax = 3\n\n[[rule]]\nname = "v"\nkind = "vertical"\njobs = "*"\nabove = 90\nfor = "1m"\n',
    Path("p.toml"),
)
JOB = "20261201-000000-aaaaaa"


def fleet_with(backlog: float, util: float, seq: int, t: float, fleet: Fleet | None = None) -> Fleet:
    fleet = fleet or Fleet(clock=lambda: t)
    fleet.apply_jobs(
        "gpu-a",
        [
            {
                "id": JOB,
                "name": "yolo",
                "node": "0",
                "state": "running",
                "started_at": 0.0,
                "last_seq": 0,
                "last": {},
            }
        ],
    )
    fleet.apply_events(
        "gpu-a",
        JOB,
        "0",
        [
            {"seq": seq, "t": t, "kind": "metric", "values": {"backlog": backlog, "loss": 0.5}},
            {
                "seq": seq + 1,
                "t": t,
                "kind": "gpu",
                "gpus": [
                    {"uuid": "GPU-1", "index": 0, "util": util, "mem_used_mib": 1000, "mem_total_mib": 4000},
                    {
                        "uuid": "GPU-2",
                        "index": 1,
                        "util": util - 10,
                        "mem_used_mib": 3000,
                        "mem_total_mib": 4000,
                    },
                ],
            },
        ],
    )
    return fleet


def test_each_pass_samples_the_last_values_and_the_engine_judges_them() -> None:
    sampler, fleet = Sampler(RULES), None
    for i in range(0, 13):  # a pass every 5 s for a minute
        t = 1000.0 + 5 * i
        fleet = fleet_with(12000, 97, 1 + 2 * i, t, fleet)
        [view] = sampler.sample(fleet, t)
    assert view.name == "yolo" and view.nodes == 1 and view.hosts == ("gpu-a",)
    assert [p.value for p in view.metrics["backlog"]][-2:] == [12000, 12000] and view.metrics["backlog"][
        -1
    ].t == 1060.0
    assert view.gpu[("gpu-a", "gpu_util")][-1].value == 92  # the host's GPUs' mean
    assert view.gpu[("gpu-a", "gpu_mem")][-1].value == 50
    decisions = {d.rule: d for d in decide(Inputs(1060.0, [view], RULES))}
    assert (decisions["b"].action, decisions["b"].to) == ("scale", 2)
    assert decisions["v"].action == "none" and "has no provider/instance_type" in decisions["v"].reason


def test_series_stay_bounded_and_ended_jobs_are_dropped() -> None:
    points: list[Point] = []
    for t in range(1000):
        append_bounded(points, Point(float(t), 1.0), keep=60)
    assert (
        points[0].t <= 999 - 60 < points[1].t and len(points) == 61
    )  # the point in force at the window's start
    sampler = Sampler(RULES)
    fleet = fleet_with(1, 1, 1, 10.0)
    assert sampler.sample(fleet, 10.0)
    fleet.apply_events(
        "gpu-a", JOB, "0", [{"seq": 3, "t": 11.0, "kind": "state", "state": "exited", "exit_code": 0}]
    )
    assert sampler.sample(fleet, 11.0) == [] and JOB not in sampler.metrics


def test_the_cost_board_feeds_the_budget_checks() -> None:
    sampler = Sampler(RULES)
    fleet = fleet_with(12000, 50, 1, 10.0)
    fleet.costs = CostBoard(
        burn=6.0, today=48.0, daily_budget=50.0, jobs={JOB: JobCostShown(accrued=9.5, burn=1.5, budget=10.0)}
    )
    views, left, burn = with_costs(sampler.sample(fleet, 10.0), fleet.costs)
    assert (views[0].burn_per_node, views[0].budget_left, left, burn) == (1.5, 0.5, 2.0, 6.0)
    held = [dataclasses.replace(views[0], metrics={"backlog": [Point(0.0, 12000.0), Point(10.0, 12000.0)]})]
    d = {d.rule: d for d in decide(Inputs(70.0, held, RULES, fleet_budget_left=left, fleet_burn=burn))}["b"]
    assert d.action == "refused" and "the job's budget has $0.500 left" in d.reason
    # the board's figures are in its own currency, and the refusal says that currency, not "$"
    eur = dataclasses.replace(fleet.costs, currency="EUR")
    views, left, burn = with_costs(sampler.sample(fleet, 11.0), eur)
    assert (views[0].budget_left, left, burn) == (0.5, 2.0, 6.0)
    held = [dataclasses.replace(views[0], metrics={"backlog": [Point(0.0, 12000.0), Point(10.0, 12000.0)]})]
    d = {
        d.rule: d
        for d in decide(Inputs(70.0, held, RULES, fleet_budget_left=left, fleet_burn=burn, currency="EUR"))
    }["b"]
    assert d.action == "refused" and "the job's budget has EUR 0.500 left" in d.reason and "$" not in d.reason
