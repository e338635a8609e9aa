"""A job's budget, as its supervisor enforces it: a `budget_warning` event once the job has spent 80 %
of it (not later: the user is told while there is still budget left), then the stop at 100 %."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from remote_agent.supervision.autostop import AutoStop
from tests.support.jobs import journal, launch
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def test_the_warning_comes_at_80_percent_once_then_the_stop() -> None:
    clock, journaled = Clock(), []
    # $3600/h at the whole host: one dollar a second, so a $10 budget is 10 s of the clock.
    # grace 0: a stop that takes no time, so the stop starts at 100 % (the lead has its own tests).
    rule = AutoStop(
        {"price": {"per_hour": 3600.0, "share": 1.0}, "budget": 10.0, "grace": 0},
        lambda kind, **fields: journaled.append(fields),
        clock,
    )

    def warnings() -> list[dict]:
        return [f for f in journaled if f.get("event") == "budget_warning"]

    clock.now += 7.9
    assert rule.check() is None and warnings() == []  # 79 %: nothing yet
    clock.now += 0.1
    assert rule.check() is None  # 80 %: warned, still running
    [warning] = warnings()
    assert warning["data"]["accrued"] == pytest.approx(8.0) and warning["data"]["budget"] == 10.0
    clock.now += 1.0
    assert rule.check() is None and len(warnings()) == 1  # 90 %: once is enough
    clock.now += 1.0
    assert rule.check() == "budget: accrued 10.00 USD reached the budget of 10.00"
    assert [f.get("event") for f in journaled] == ["budget_warning", "autostop"]


def test_one_check_past_the_whole_budget_still_warns_first() -> None:
    clock, journaled = Clock(), []
    rule = AutoStop(
        {"price": {"per_hour": 3600.0}, "budget": 10.0, "grace": 0},
        lambda kind, **fields: journaled.append(fields),
        clock,
    )
    clock.now += 30.0
    assert rule.check() is not None
    assert [f.get("event") for f in journaled] == ["budget_warning", "autostop"]


@pytest.mark.slow
def test_the_supervisor_warns_between_80_and_95_percent(
    client: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    # One dollar a second and a $10 budget: 80-95 % is a 1.5 s window. The supervisor checks its rules
    # once a second, and at once when poked (what an `autostop` request does): poke it often so that a
    # check falls in the window however the seconds line up.
    job = launch(
        client,
        workdir,
        [sys.executable, "-c", "import time; time.sleep(120)"],
        price={"per_hour": 3600.0, "share": 1.0, "currency": "USD"},
        budget=10.0,
        grace=0,
    )

    def warning() -> list[dict]:
        client.request("autostop", job=job["id"], node="0", paused=False)  # a no-op that wakes the supervisor
        return [
            r
            for r in journal(agent_dir, job["id"])
            if r["kind"] == "event" and r["event"] == "budget_warning"
        ]

    try:
        [record] = wait_for(warning, timeout=60, interval=0.05, what="the budget warning")
        assert 8.0 <= record["data"]["accrued"] < 9.5, record  # 80 % <= spent < 95 %
        assert record["data"]["budget"] == 10.0
        assert not [
            r for r in journal(agent_dir, job["id"]) if r["kind"] == "event" and r["event"] == "autostop"
        ]
    finally:
        client.request("kill", job=job["id"], node="0")
