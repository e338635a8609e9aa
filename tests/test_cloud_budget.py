"""The fleet's daily budget on cloud instances, against the local Aliyun endpoint: once today's
spend reaches it, only running instances the user opted in (gpudeck-managed=true) are stopped;
every decision is journaled with its inputs; a dry run and a day under budget stop nothing; in the
TUI the cost service's over-budget board makes the Cloud service act, once a day."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.aliyun import AliyunServer, serving
from tests.support.tui import sync, until
from tui.actions.cloud import enforce_budget
from tui.app import GpuDeckApp
from tui.cloud.aliyun import AliyunProvider
from tui.cloud.retry import RetryPolicy
from tui.cloud.rules import read_journal
from tui.fleet.costs import CostBoard
from tui.settings import Settings

OPTED = {"gpudeck-managed": "true"}


@pytest.fixture
def aliyun(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def three(aliyun: AliyunServer) -> tuple[str, str, str]:
    acc = aliyun.account
    return (
        acc.add(name="mine", tags=OPTED),
        acc.add(name="theirs"),
        acc.add(name="mine-stopped", status="Stopped", tags=OPTED),
    )


def providers() -> list[AliyunProvider]:
    return [AliyunProvider("cn-hangzhou", retry=RetryPolicy(attempts=2, first=0.01, cap=0.01))]


def test_over_budget_stops_only_the_running_opted_in_instance_and_journals_each(aliyun: AliyunServer) -> None:
    mine, theirs, stopped = three(aliyun)
    dry, problems = enforce_budget(providers(), 250.0, 200.0, "USD", dry_run=True)
    assert problems == [] and {(d.instance_id, o) for d, o in dry} == {
        (mine, "would stop (dry run)"),
        (theirs, "refuse"),
    }
    assert aliyun.account.status(mine) == "Running"

    done, _ = enforce_budget(providers(), 250.0, 200.0, "USD")
    assert {(d.instance_id, o) for d, o in done} == {(mine, "stopped"), (theirs, "refuse")}
    assert aliyun.account.status(mine) == "Stopped" and aliyun.account.status(theirs) == "Running"
    assert [c["InstanceId"] for c in aliyun.account.calls if c["Action"] == "StopInstance"] == [mine]
    records = [r for r in read_journal() if r["outcome"] in ("stopped", "refuse")]
    assert {r["instance_id"] for r in records} == {mine, theirs}
    stop = next(r for r in records if r["instance_id"] == mine)
    assert stop["inputs"]["rule"] == "fleet daily budget" and stop["inputs"]["today"] == 250.0
    assert stop["inputs"]["daily_budget"] == 200.0 and stop["inputs"]["opted_in"] is True
    assert stop["inputs"]["price_per_hour"] == 10.8 and "reached" in stop["reason"]
    assert stopped not in {r["instance_id"] for r in read_journal()}  # not running: nothing to decide


def test_under_budget_stops_nothing(aliyun: AliyunServer) -> None:
    mine, theirs, _ = three(aliyun)
    done, _ = enforce_budget(providers(), 150.0, 200.0, "USD")
    assert {o for _d, o in done} == {"keep"} and aliyun.account.status(mine) == "Running"
    assert not any(c["Action"] == "StopInstance" for c in aliyun.account.calls)


@pytest.mark.slow
@sync
async def test_the_tuis_over_budget_board_stops_opted_in_instances_once(aliyun: AliyunServer) -> None:
    mine, theirs, _ = three(aliyun)
    app = GpuDeckApp(hosts=[], store=None, settings=Settings())
    async with app.run_test(size=(120, 30)) as pilot:
        board = CostBoard(today=250.0, daily_budget=200.0, over=True)
        app.costs.updated(board)  # what the cost engine's board does when today's spend reaches the budget
        await until(pilot, lambda: aliyun.account.status(mine) == "Stopped", "the opted-in instance stopped")
        assert aliyun.account.status(theirs) == "Running"
        aliyun.account.instances[mine]["Status"] = "Running"  # started again by hand the same day
        app.costs.updated(board)
        await pilot.pause(0.5)
        assert aliyun.account.status(mine) == "Running"  # once a day: the user's restart is respected
        assert len([c for c in aliyun.account.calls if c["Action"] == "StopInstance"]) == 1


@pytest.mark.slow  # the everyday subset stays under a minute serially
@sync
async def test_read_only_never_stops_an_instance_for_the_budget(aliyun: AliyunServer) -> None:
    mine, _, _ = three(aliyun)
    app = GpuDeckApp(hosts=[], store=None, settings=Settings(), read_only=True)
    async with app.run_test(size=(120, 30)) as pilot:
        app.costs.updated(CostBoard(today=250.0, daily_budget=200.0, over=True))
        await pilot.pause(0.5)
        assert aliyun.account.status(mine) == "Running" and not aliyun.account.calls
