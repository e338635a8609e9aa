"""Issue 32's smaller fleet items (6 and 7), each where it went wrong: a policy's reason names the
rules' true order, and numbers print as numbers."""

from __future__ import annotations

from pathlib import Path

from remote_agent.metrics.parse import parse_line
from remote_agent.supervision.autostop import AutoStop
from tests.test_cost_truth import Clock, job_dir
from tests.test_policy_engine import MONDAY_0900, job, one
from tui.format import metric_line, resized_text
from tui.policy.engine import decide
from tui.policy.inputs import Inputs
from tui.policy.rules import parse

NIGHTS_FIRST = """
[[rule]]
name = "nights"
kind = "schedule"
jobs = "yolo*"
between = "09:00-18:00"
timezone = "Asia/Shanghai"
nodes = 4
otherwise = 1

[[rule]]
name = "lunch"
kind = "schedule"
jobs = "yolo*"
between = "12:00-13:00"
timezone = "Asia/Shanghai"
nodes = 2
"""


def test_a_deferred_schedule_names_the_winner_in_its_true_order() -> None:
    policies = parse(NIGHTS_FIRST, Path("policies.toml"))
    # 20:00: no window open; "nights" (listed first) decides by its `otherwise` — it said "listed later"
    evening = decide(Inputs(MONDAY_0900 + 11 * 3600, [job(4)], policies))
    assert one(evening, "nights").to == 1
    reason = one(evening, "lunch").reason
    assert "rule 'nights' (listed earlier) decides" in reason and "outside its window" in reason
    noon = decide(Inputs(MONDAY_0900 + 3 * 3600 + 60, [job(4)], policies))
    assert "rule 'lunch' (listed later) decides" in one(noon, "nights").reason


def test_steps_print_as_whole_numbers_not_exponents() -> None:
    assert metric_line({"step": 12000.0, "loss": 0.5}) == "step=12000  loss=0.5"  # it said 1.2e+04
    assert metric_line({"tokens": 12345.6, "lr": 3e-05}) == "lr=3.000e-05  tokens=12345.6"
    assert "at step 1200000" in resized_text({"from": 2, "to": 3, "step": 1_200_000})


def test_a_budget_under_the_stops_lead_waits_for_a_measured_spend(tmp_path: Path) -> None:
    """$1/s, a $5 budget and a 10 s lead: it stopped the job at its first check, having spent $0."""
    clock, journaled = Clock(), []
    rule = AutoStop(
        {"price": {"per_hour": 3600.0}, "budget": 5.0, "grace": 60},
        lambda kind, **fields: journaled.append(fields),
        clock,
        files_dir=job_dir(tmp_path, "J"),
    )
    assert rule.check() is None and not [f for f in journaled if f.get("event") == "autostop"]
    clock.now += 1.0
    reason = rule.check()
    assert reason is not None and reason.startswith("budget: accrued 1.00 USD, with 10.00 more over the stop")


def test_a_json_points_world_size_stays_with_it() -> None:
    """Issue 32, item 7: the trainer's points say their world size; gpudeck dropped it (an elastic job's
    chart could not show where the size changed). In free text it stays an identifier, not a value."""
    assert parse_line('{"step": 4, "loss": 0.5, "world_size": 2}') == {
        "step": 4,
        "loss": 0.5,
        "world_size": 2,
    }
    assert parse_line("step 4 loss 0.5 world_size 2") == {"step": 4, "loss": 0.5}
