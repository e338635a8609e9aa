"""The pure engine on scripted inputs and a controlled clock: the seeds' three rules, no flapping,
bounds, cooldowns, schedule overlaps and budget refusals."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from tests.test_policy_rules import seed_text
from tui.cost import catalog
from tui.cost.catalog import CatalogEntry
from tui.policy.engine import Decision, decide
from tui.policy.inputs import Applied, HostInstance, Inputs, JobFacts, Point
from tui.policy.rules import Policies, parse

SHANGHAI = dt.timezone(dt.timedelta(hours=8))
MONDAY_0900 = dt.datetime(2026, 12, 7, 9, 0, tzinfo=SHANGHAI).timestamp()  # 2026-12-07 is a Monday


def seeds() -> Policies:
    """The README's seed rules."""
    return parse(seed_text(), Path("policies.toml"))


def only(kind: str, policies: Policies | None = None) -> Policies:
    p = policies or seeds()
    return dataclasses.replace(p, rules=tuple(r for r in p.rules if r.kind == kind))


def job(nodes: int = 2, name: str = "yolo-v8", **kw: object) -> JobFacts:
    return JobFacts(id=f"j-{name}-{nodes}", name=name, nodes=nodes, hosts=("local",), **kw)  # type: ignore[arg-type]


def series(start: float, end: float, value, step: float = 30.0) -> list[Point]:
    """A point every `step` seconds in [start, end]; `value` is a number or a function of the time."""
    out, t = [], start
    while t <= end:
        out.append(Point(t, value(t) if callable(value) else value))
        t += step
    return out


def one(decisions: list[Decision], rule: str) -> Decision:
    [d] = [d for d in decisions if d.rule == rule]
    return d


# -- backlog > 10000 for 5m → +1 -------------------------------------------------------------------


def test_backlog_crossing_the_threshold_for_the_rules_duration_adds_one_node() -> None:
    t0 = MONDAY_0900 + 3 * 3600  # inside office hours; only the metric rule here
    below = series(t0, t0 + 600, 9000)
    crossed = t0 + 630
    points = below + series(crossed, crossed + 3600, 12000)

    def at(now: float) -> Decision:
        return one(decide(Inputs(now, [job(2, metrics={"backlog": points})], only("metric"))), "backlog")

    early = at(crossed + 299)
    assert (
        early.action == "none"
        and early.to == 2
        and "has not held for 5m" in early.reason
        and "9000" in early.reason
    )
    d = at(crossed + 300)
    assert (d.action, d.frm, d.to) == ("scale", 2, 3), d
    assert "backlog > 10000 for 5m" in d.reason and d.inputs["value"] == 12000 and d.inputs["nodes"] == 2
    assert d.to_json()["job"] == {"id": "j-yolo-v8-2", "name": "yolo-v8"}


def test_backlog_rule_keeps_its_bounds_and_cooldown_and_says_no_data() -> None:
    t0 = 1_800_000_000.0
    high = {"backlog": series(t0, t0 + 900, 20000)}
    now = t0 + 900
    at_max = one(decide(Inputs(now, [job(8, metrics=high)], only("metric"))), "backlog")
    assert at_max.action == "none" and "at its bound (max 8)" in at_max.reason
    cooling = one(
        decide(
            Inputs(
                now,
                [job(3, metrics=high)],
                only("metric"),
                memory={("backlog", "yolo-v8"): Applied(now - 120, 3)},
            )
        ),
        "backlog",
    )
    assert cooling.action == "none" and "cooling down: applied 2m ago (cooldown 10m)" in cooling.reason
    nothing = one(decide(Inputs(now, [job(3)], only("metric"))), "backlog")
    assert nothing.action == "none" and "no data" in nothing.reason
    young = one(
        decide(Inputs(now, [job(3, metrics={"backlog": series(now - 60, now, 20000)})], only("metric"))),
        "backlog",
    )
    assert young.action == "none" and "seen for 1m only (needs 5m)" in young.reason


# -- weekdays 09:00-18:00 Asia/Shanghai → 4, else 1 --------------------------------------------------


def test_office_hours_schedule_asks_four_nodes_at_nine_monday_and_one_at_six() -> None:
    policies = only("schedule")
    before = one(decide(Inputs(MONDAY_0900 - 60, [job(1)], policies)), "office-hours")
    assert before.action == "none" and "it has them" in before.reason
    nine = one(decide(Inputs(MONDAY_0900, [job(1)], policies)), "office-hours")
    assert (nine.action, nine.frm, nine.to) == ("scale", 1, 4), nine
    assert (
        "Mon 09:00 CST: inside 09:00-18:00 → 4 nodes" in nine.reason
        and nine.inputs["timezone"] == "Asia/Shanghai"
    )
    six = one(decide(Inputs(MONDAY_0900 + 9 * 3600, [job(4)], policies)), "office-hours")
    assert (six.action, six.frm, six.to) == ("scale", 4, 1) and "outside" in six.reason
    saturday = one(decide(Inputs(MONDAY_0900 + 5 * 86400 + 3600, [job(4)], policies)), "office-hours")
    assert (saturday.action, saturday.to) == ("scale", 1)
    other = decide(Inputs(MONDAY_0900, [job(1, name="bert")], policies))
    assert other == []  # the glob: rules are about yolo* jobs only


def test_a_schedule_acts_once_per_period_so_a_metric_grown_job_stays_until_the_next_edge() -> None:
    policies = only("schedule")
    applied = Applied(
        MONDAY_0900, 4, period=one(decide(Inputs(MONDAY_0900, [job(1)], policies)), "office-hours").period
    )
    later = one(
        decide(Inputs(MONDAY_0900 + 3600, [job(5)], policies, memory={("office-hours", "yolo-v8"): applied})),
        "office-hours",
    )
    assert later.action == "none" and "already set this period" in later.reason
    evening = one(
        decide(
            Inputs(MONDAY_0900 + 9 * 3600, [job(5)], policies, memory={("office-hours", "yolo-v8"): applied})
        ),
        "office-hours",
    )
    assert (evening.action, evening.to) == ("scale", 1)


def test_the_later_listed_schedule_wins_where_windows_overlap(tmp_path: Path) -> None:
    text = seed_text().split('[[rule]]\nname = "backlog"')[0] + (
        '[[rule]]\nname = "lunch"\nkind = "schedule"\njobs = "yolo*"\nbetween = "12:00-13:00"\n'
        'timezone = "Asia/Shanghai"\nnodes = 2\n'
    )
    policies = parse(text, tmp_path / "p.toml")
    noon = decide(Inputs(MONDAY_0900 + 3 * 3600 + 60, [job(4)], policies))
    assert (one(noon, "lunch").action, one(noon, "lunch").to) == ("scale", 2)
    assert (
        one(noon, "office-hours").action == "none"
        and "'lunch' (listed later)" in one(noon, "office-hours").reason
    )
    ten = decide(Inputs(MONDAY_0900 + 3600, [job(1)], policies))
    assert one(ten, "office-hours").to == 4 and one(ten, "lunch").action == "none"


# -- gpu_util > 90 for 10m → the next type of the family, with its price ---------------------------


G5_2X = CatalogEntry(
    "aws",
    "g5.2xlarge",
    "us-east-1",
    1,
    "A10G",
    24,
    8,
    32,
    1.212,
    0.49,
    0.52,
    "https://aws.amazon.com/ec2/instance-types/g5/",
    "2026-11-20",
    "2026-11-20",
)


def vertical_at(util: float, minutes: float, instance: HostInstance, cat: list[CatalogEntry]) -> Decision:
    now = 1_800_000_000.0
    host = {("local", "gpu_util"): series(now - minutes * 60, now, util, step=1.0)}
    return one(
        decide(Inputs(now, [job(1, instance=instance)], only("vertical"), host_series=host, catalog=cat)),
        "bigger-gpu",
    )


def test_util_95_for_11_minutes_proposes_the_next_type_of_the_family_with_its_price_difference() -> None:
    cat = [*catalog.entries(), G5_2X]
    d = vertical_at(95, 11, HostInstance("aws", "g5.xlarge", "us-east-1", "on-demand"), cat)
    g5 = catalog.find("aws", "g5.xlarge", "us-east-1")
    assert g5 is not None and g5.on_demand_usd_per_hour is not None
    assert (d.action, d.frm, d.to) == ("propose", "g5.xlarge", "g5.2xlarge"), d
    diff = G5_2X.on_demand_usd_per_hour - g5.on_demand_usd_per_hour
    assert d.inputs["price_difference_usd_per_hour"] == diff and f"+${diff:.3f}/h on-demand" in d.reason
    assert "gpu_util > 90 for 10m" in d.reason and d.inputs["family"] == "g5"
    short = vertical_at(95, 9, HostInstance("aws", "g5.xlarge", "us-east-1", "on-demand"), cat)
    assert short.action == "none" and "seen for 9m only" in short.reason
    spot = vertical_at(95, 11, HostInstance("aws", "g5.xlarge", "us-east-1", "spot"), cat)
    assert spot.to == "g5.2xlarge" and "spot: a new spot request" in spot.reason
    assert (
        spot.inputs["price_difference_usd_per_hour"] == G5_2X.spot_usd_per_hour_low - g5.spot_usd_per_hour_low
    )


def test_auto_vertical_applies_only_where_the_job_restarts_cleanly() -> None:
    now = 1_800_000_000.0
    cat = [*catalog.entries(), G5_2X]
    rules = only(
        "vertical",
        parse(
            seed_text().replace('for = "10m"               # default', 'for = "10m"\nauto = true'),
            Path("policies.toml"),
        ),
    )
    assert rules.rules[0].auto

    def at(instance: HostInstance, nodes: int = 1, policies: Policies = rules) -> Decision:
        host = {("local", "gpu_util"): series(now - 660, now, 95, step=1.0)}
        return one(
            decide(Inputs(now, [job(nodes, instance=instance)], policies, host_series=host, catalog=cat)),
            "bigger-gpu",
        )

    on_demand = at(HostInstance("aws", "g5.xlarge", "us-east-1", "on-demand"))
    assert (on_demand.action, on_demand.frm, on_demand.to) == ("scale", "g5.xlarge", "g5.2xlarge"), on_demand
    spot = at(HostInstance("aws", "g5.xlarge", "us-east-1", "spot"))
    assert spot.action == "propose" and "stays a proposal: a spot instance may be reclaimed" in spot.reason
    a100 = [e for e in catalog.entries() if e.instance_type.startswith("ecs.gn7-")]
    family = one(
        decide(
            Inputs(
                now,
                [job(1, instance=HostInstance("aliyun", "ecs.gn7-c12g1.3xlarge", None, "on-demand"))],
                rules,
                host_series={("local", "gpu_util"): series(now - 660, now, 95, step=1.0)},
                catalog=a100,
            )
        ),
        "bigger-gpu",
    )
    assert (family.action, family.to) == ("scale", "ecs.gn7-c13g1.13xlarge")  # the same A100s, 4 of them
    changed = dataclasses.replace(G5_2X, gpu_model="A100")
    model = one(
        decide(
            Inputs(
                now,
                [job(1, instance=HostInstance("aws", "g5.xlarge", "us-east-1", "on-demand"))],
                rules,
                host_series={("local", "gpu_util"): series(now - 660, now, 95, step=1.0)},
                catalog=[*catalog.entries(), changed],
            )
        ),
        "bigger-gpu",
    )
    assert (
        model.action == "propose" and "stays a proposal: the GPU model changes (A10G → A100)" in model.reason
    )
    two = at(HostInstance("aws", "g5.xlarge", "us-east-1", "on-demand"), nodes=2)
    assert two.action == "propose" and "a 2-node job" in two.reason
    # after a move the job runs on the bigger type: the cooldown holds, it does not climb at once
    moved = one(
        decide(
            Inputs(
                now + 60,
                [job(1, instance=HostInstance("aws", "g5.2xlarge", "us-east-1", "on-demand"))],
                rules,
                host_series={("local", "gpu_util"): series(now - 660, now + 60, 95, step=1.0)},
                catalog=[*cat, dataclasses.replace(G5_2X, instance_type="g5.4xlarge", vcpus=16)],
                memory={("bigger-gpu", "yolo-v8"): Applied(now, "g5.2xlarge")},
            )
        ),
        "bigger-gpu",
    )
    assert moved.action == "none" and "moved here 1m ago" in moved.reason, moved


def test_a_bigger_type_the_daily_budget_cannot_pay_is_refused_not_proposed() -> None:
    now = 1_800_000_000.0
    cat = [*catalog.entries(), G5_2X]
    g5 = HostInstance("aws", "g5.xlarge", "us-east-1", "on-demand")
    host = {("local", "gpu_util"): series(now - 660, now, 95, step=1.0)}

    def with_budget(left: float, burn: float, currency: str = "USD") -> Decision:
        return one(
            decide(
                Inputs(
                    now,
                    [job(1, instance=g5)],
                    only("vertical"),
                    host_series=host,
                    catalog=cat,
                    fleet_budget_left=left,
                    fleet_burn=burn,
                    currency=currency,
                )
            ),
            "bigger-gpu",
        )

    assert with_budget(100.0, 1.0).action == "propose"
    assert with_budget(1.5, 1.0).action == "propose"  # 1.00/h now + 0.206/h more: an hour of it fits in 1.50
    poor = with_budget(1.1, 1.0)
    assert (poor.action, poor.to) == ("refused", "g5.2xlarge")
    assert "refused: the fleet's daily budget has $1.10 left, less than one hour at $1.21/h" in poor.reason
    spent = with_budget(-2.0, 1.0, "CNY")
    assert spent.action == "refused" and "the fleet's daily budget is spent (CNY 2.00 over)" in spent.reason


def test_vertical_says_unknown_prices_and_never_changes_family() -> None:
    d = vertical_at(95, 11, HostInstance("tencent", "GN10Xp.2XLARGE40"), catalog.entries())
    assert (d.action, d.to) == ("propose", "GN10Xp.5XLARGE80") and "price difference unknown" in d.reason
    top = vertical_at(95, 11, HostInstance("aws", "p5.48xlarge", "us-east-1"), catalog.entries())
    assert top.action == "none" and "no larger p5 type" in top.reason
    bare = vertical_at(95, 11, HostInstance(), catalog.entries())
    assert bare.action == "none" and "has no provider/instance_type" in bare.reason
    assert (bare.frm, bare.to) == (None, None)  # no type known: not a node count
    idle = vertical_at(50, 11, HostInstance("aws", "g5.xlarge"), catalog.entries())
    assert idle.action == "none" and "50" in idle.reason
    no_gpu = one(
        decide(Inputs(1e9, [job(1, instance=HostInstance("aws", "g5.xlarge"))], only("vertical"))),
        "bigger-gpu",
    )
    assert no_gpu.action == "none" and "no data is not 0" in no_gpu.reason


# -- safety ------------------------------------------------------------------------------------------


def simulate(
    policies: Policies, metric, start: float, minutes: int, nodes: int = 2
) -> list[tuple[float, Decision]]:
    """A controller on a 30 s tick applying every scale decision (the job keeps its name): (time, decision)."""
    applied: list[tuple[float, Decision]] = []
    memory: dict[tuple[str, str], Applied] = {}
    points: list[Point] = []
    t = start
    while t <= start + minutes * 60:
        points.append(Point(t, metric(t)))
        for d in decide(Inputs(t, [job(nodes, metrics={"backlog": list(points)})], policies, memory=memory)):
            if d.action == "scale":
                applied.append((t, d))
                nodes = d.to
                memory[(d.rule, d.job_name)] = Applied(t, d.to, d.period)
        t += 30
    return applied


UP_AND_DOWN = """
[[rule]]
name = "backlog"
kind = "metric"
jobs = "yolo*"
metric = "backlog"
above = 10000
for = "5m"
add = 1
max = 8
cooldown = "10m"

[[rule]]
name = "drained"
kind = "metric"
jobs = "yolo*"
metric = "backlog"
below = 10000
for = "5m"
add = -1
cooldown = "10m"
"""


def test_an_oscillating_metric_does_not_flap(tmp_path: Path) -> None:
    rules = parse(UP_AND_DOWN, tmp_path / "p.toml")
    start = MONDAY_0900 + 3600
    # across the threshold every minute, for three hours: neither rule ever holds for 5 minutes
    assert simulate(rules, lambda t: 14000 if int((t - start) // 60) % 2 else 6000, start, 180) == []
    # slower swings (4 minutes each way) do not hold either
    assert simulate(rules, lambda t: 14000 if int((t - start) // 240) % 2 else 6000, start, 180) == []
    # a sustained backlog grows the job one node at a time, never faster than the cooldown, up to max
    grown = simulate(rules, lambda t: 20000, start, 180)
    assert [d.to for _, d in grown] == [3, 4, 5, 6, 7, 8]
    assert grown[0][0] == start + 300  # held for the rule's 5 minutes first
    assert all(b - a >= 600 for (a, _), (b, _) in zip(grown, grown[1:], strict=False))
    # swings slower than the duration do scale, but each way at most once per cooldown
    slow = simulate(rules, lambda t: 14000 if int((t - start) // 1200) % 2 else 6000, start, 180, nodes=4)
    assert slow and all(
        b - a >= 600 for (a, x), (b, y) in zip(slow, slow[1:], strict=False) if x.rule == y.rule
    )


def test_a_scale_the_budget_cannot_pay_for_is_refused() -> None:
    now = 1_800_000_000.0
    high = {"backlog": series(now - 600, now, 20000)}
    poor = one(
        decide(Inputs(now, [job(2, metrics=high, burn_per_node=1.5, budget_left=4.0)], only("metric"))),
        "backlog",
    )
    assert (poor.action, poor.to) == ("refused", 3)
    assert "refused: the job's budget has $4.00 left, less than one hour at 3 nodes ($4.50/h)" in poor.reason
    fleet = one(
        decide(
            Inputs(
                now,
                [job(2, metrics=high, burn_per_node=1.5)],
                only("metric"),
                fleet_budget_left=5.0,
                fleet_burn=4.0,
            )
        ),
        "backlog",
    )
    assert fleet.action == "refused" and "fleet's daily budget has $5.00 left" in fleet.reason
    rich = one(
        decide(Inputs(now, [job(2, metrics=high, burn_per_node=1.5, budget_left=100.0)], only("metric"))),
        "backlog",
    )
    assert rich.action == "scale"


def test_a_refusal_names_the_budgets_currency_not_dollars() -> None:
    now = 1_800_000_000.0
    high = {"backlog": series(now - 600, now, 20000)}
    poor = one(
        decide(
            Inputs(
                now,
                [job(2, metrics=high, burn_per_node=10.0, budget_left=25.0)],
                only("metric"),
                currency="CNY",
            )
        ),
        "backlog",
    )
    assert "the job's budget has CNY 25.00 left, less than one hour at 3 nodes (CNY 30.00/h)" in poor.reason
    spent = one(
        decide(Inputs(now, [job(2, metrics=high)], only("metric"), fleet_budget_left=-3.0, currency="CNY")),
        "backlog",
    )
    assert "the fleet's daily budget is spent (CNY 3.00 over)" in spent.reason
    fleet = one(
        decide(
            Inputs(
                now,
                [job(2, metrics=high, burn_per_node=1.0)],
                only("metric"),
                fleet_budget_left=5.0,
                fleet_burn=4.9999,
                currency="CNY",
            )
        ),
        "backlog",
    )
    assert "the fleet's daily budget has CNY 5.00 left, less than one hour at CNY 6.00/h" in fleet.reason
    assert "$" not in poor.reason + spent.reason + fleet.reason


def test_one_resize_per_job_per_pass_and_auto_false_only_proposes(tmp_path: Path) -> None:
    p = seeds()
    now = MONDAY_0900 + 600
    both = decide(Inputs(now, [job(1, metrics={"backlog": series(now - 600, now, 20000)})], p))
    assert one(both, "office-hours").action == "scale"
    assert (
        one(both, "backlog").action == "none"
        and "deferred: rule 'office-hours'" in one(both, "backlog").reason
    )
    manual = dataclasses.replace(p, rules=tuple(dataclasses.replace(r, auto=False) for r in p.rules))
    d = one(decide(Inputs(now, [job(1)], manual)), "office-hours")
    assert (d.action, d.to) == ("propose", 4)


def test_a_metric_exactly_at_its_threshold_has_not_crossed_it_and_min_is_a_bound() -> None:
    t0 = 1_800_000_000.0
    now = t0 + 900
    at = one(
        decide(Inputs(now, [job(3, metrics={"backlog": series(t0, now, 10000)})], only("metric"))), "backlog"
    )
    assert at.action == "none" and "has not held" in at.reason  # "above 10000" is strict
    quiet = parse(
        '[[rule]]\nname = "quiet"\nkind = "metric"\njobs = "*"\nmetric = "backlog"\nbelow = 100\n'
        'for = "5m"\nadd = -1\nmin = 2\n',
        Path("policies.toml"),
    )

    def shrink(nodes: int, value: float) -> Decision:
        return one(
            decide(Inputs(now, [job(nodes, metrics={"backlog": series(t0, now, value)})], quiet)), "quiet"
        )

    assert shrink(3, 100).action == "none"  # "below 100" is strict too
    assert (shrink(3, 50).action, shrink(3, 50).to) == ("scale", 2)
    at_min = shrink(2, 50)
    assert at_min.action == "none" and "at its bound (min 2)" in at_min.reason


def test_a_spent_day_budget_refuses_even_at_exactly_zero_left() -> None:
    now = 1_800_000_000.0
    high = {"backlog": series(now - 600, now, 20000)}
    spent = one(decide(Inputs(now, [job(2, metrics=high)], only("metric"), fleet_budget_left=0.0)), "backlog")
    assert spent.action == "refused" and "the fleet's daily budget is spent" in spent.reason
