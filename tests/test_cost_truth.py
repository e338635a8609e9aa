"""Cost truth (issue 11, finding 13): price changes dated when they happened, a removed price ends
billing, provider minimums on jobs, fleet totals that never pass an unknown off as $0, money with
enough digits, and budgets that follow price and share while the job runs and stop on budget.

Prices are picked so the per-second rate is round: $3.60/h = $0.001/s; $3600/h = $1/s.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from remote_agent.serving.prices import PriceError, record_price
from remote_agent.supervision.autostop import AutoStop
from remote_agent.supervision.autostop import amount as agent_amount
from remote_agent.supervision.budget import gpu_share
from tests.test_cost_counters import T0, by_job, host, journal, run_of
from tui.commands.cost import fleet_figures
from tui.cost.collect import HostSnapshot
from tui.cost.counters import host_costs
from tui.cost.ledger import Ledger
from tui.cost.report import CostContext, build
from tui.cost.settings import HostPrice
from tui.format import money

PRICE = HostPrice(3.6, "USD", "on-demand", "hosts.toml price_per_hour")
UNKNOWN = HostPrice(None, "USD", "on-demand", "unknown (no price_per_hour set)")


def snap(now: float, *jobs: tuple[str, list[dict[str, Any]], str], name: str = "h") -> HostSnapshot:
    objs = [{"id": j, "node": "0", "name": j, "state": state} for j, _, state in jobs]
    return HostSnapshot(name, 0.0, now, [], None, objs, {(j, "0"): recs for j, recs, _ in jobs})


def jobs_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {j["id"]: j for j in report["jobs"]}


# -- price periods: opened when the change happened ---------------------------------------------------


def test_a_hand_edit_is_dated_when_the_file_was_written_not_at_the_next_cost_run(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        ledger.record_price("h", T0, 3.6, "USD", "hosts.toml price_per_hour", T0)
        # hosts.toml was edited to $7.20/h at T0+40; `cost` runs only at T0+100.
        edited = HostPrice(7.2, "USD", "on-demand", "hosts.toml price_per_hour")
        report = build(
            [snap(T0 + 100, ("J", journal(T0, T0 + 100), "exited"))],
            {"h": edited},
            CostContext(),
            ledger,
            settings_changed_at=T0 + 40,
        )
        rows = ledger.prices("h")
    assert [(r.at, r.per_hour) for r in rows] == [(T0, 3.6), (T0 + 40, 7.2)]
    # 40 s × $0.001 + 60 s × $0.002 = $0.16 (dated at the cost run it was $0.04 + 0 = $0.10: −6¢).
    assert jobs_of(report)["J"]["accrued_usd"] == pytest.approx(0.16)


@pytest.mark.parametrize("mtime", [T0 - 500, T0 + 10_000], ids=["before-the-last-row", "in-the-future"])
def test_a_change_is_never_back_dated_nor_dated_in_the_future(tmp_path: Path, mtime: float) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        ledger.record_price("h", T0, 3.6, "USD", "a", T0)
        build(
            [snap(T0 + 100)],
            {"h": HostPrice(7.2, "USD", "on-demand", "b")},
            CostContext(),
            ledger,
            settings_changed_at=mtime,
        )
        assert [(r.at, r.per_hour) for r in ledger.prices("h")] == [(T0, 3.6), (T0 + 100, 7.2)]  # now


def test_removing_the_price_ends_billing_then_and_the_cost_is_unknown_from_then(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        ledger.record_price("h", T0, 3.6, "USD", "hosts.toml price_per_hour", T0)
        before = journal(T0 + 1, T0 + 20)  # ended while priced: keeps its cost
        during = journal(T0 + 10, None)  # running when the price was removed at T0+50
        after = journal(T0 + 60, None)  # started afterwards
        report = build(
            [snap(T0 + 100, ("B", before, "exited"), ("D", during, "running"), ("A", after, "running"))],
            {"h": UNKNOWN},
            CostContext(),
            ledger,
            settings_changed_at=T0 + 50,
        )
        last = ledger.prices("h")[-1]
    assert (last.at, last.per_hour) == (T0 + 50, None) and last.source.startswith("price removed")
    jobs = jobs_of(report)
    # B ran 19 s alone... then with D: it is known either way (the price held all its life).
    assert jobs["B"]["accrued_usd"] is not None and jobs["B"]["price_unknown_on"] == []
    for j in ("D", "A"):
        assert jobs[j]["accrued_usd"] is None and jobs[j]["burn_usd_per_hour"] is None  # not $3.60/h
        assert jobs[j]["price_unknown_on"] == ["h"]
    [h] = report["hosts"]
    assert h["burn_usd_per_hour"] is None


def test_setting_a_price_does_not_bill_jobs_that_ended_before_it(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state.db") as ledger:
        report = build(
            [
                snap(
                    T0 + 200,
                    ("OLD", journal(T0, T0 + 10), "exited"),
                    ("NEW", journal(T0 + 150, None), "running"),
                )
            ],
            {"h": PRICE},
            CostContext(),
            ledger,
            settings_changed_at=T0 + 100,
        )
    jobs = jobs_of(report)
    assert jobs["OLD"]["accrued_usd"] is None and jobs["OLD"]["price_unknown_on"] == ["h"]
    assert jobs["NEW"]["accrued_usd"] == pytest.approx(0.05)  # 50 s × $0.001


def test_the_aws_minimum_applies_to_a_short_job() -> None:
    short = run_of("h", "S", journal(T0, T0 + 20), state="exited")
    aws = by_job(host_costs(host([], T0 + 100, minimum_s=60), [short]))["S"]
    assert aws.accrued.get() == pytest.approx(0.06)  # billed 60 s, not 20 s
    other = by_job(host_costs(host([], T0 + 100), [short]))["S"]
    assert other.accrued.get() == pytest.approx(0.02)  # no minimum where none applies
    long = run_of("h", "L", journal(T0, T0 + 90), state="exited")
    assert by_job(host_costs(host([], T0 + 100, minimum_s=60), [long]))["L"].accrued.get() == pytest.approx(
        0.09
    )


# -- fleet totals ----------------------------------------------------------------------------------


def test_fleet_totals_with_no_price_anywhere_are_unknown_not_zero() -> None:
    report = build([snap(T0 + 100, ("J", journal(T0, None), "running"))], {"h": UNKNOWN}, CostContext())
    fleet = report["fleet"]
    assert fleet["burn_usd_per_hour"] is None and fleet["jobs_accrued_usd"] is None
    assert fleet["unpriced_hosts"] == ["h"]
    line = ", ".join(fleet_figures(fleet, "USD"))
    assert "$0.00" not in line and line.startswith("burn unknown (1 host unpriced)")


def test_fleet_totals_with_a_part_unknown_are_lower_bounds() -> None:
    priced = snap(T0 + 100, ("P", journal(T0, None), "running"), name="a")
    unpriced = snap(T0 + 100, ("U", journal(T0, None), "running"), name="b")
    report = build([priced, unpriced], {"a": PRICE, "b": UNKNOWN}, CostContext())
    fleet = report["fleet"]
    assert fleet["burn_usd_per_hour"] == 3.6 and fleet["unknown"]["burn"] == ["b"]
    figures = fleet_figures(fleet, "USD")
    assert figures[0] == "burn ≥ $3.60/h (1 host unpriced)"
    assert figures[2] == "jobs ≥ $0.100 (1 job unpriced)"


# -- money shown true --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.005, "0.005"),
        (0.0005, "0.0005"),
        (0.123, "0.123"),
        (0.01234, "0.012"),
        (1.5, "1.50"),
        (0.0, "0.00"),
        (0.9999, "1.00"),
        (0.99951, "1.00"),
        (-0.9999, "-1.00"),
        (0.0999, "0.100"),
        (0.99949, "0.999"),
    ],
)
def test_money_has_enough_digits(value: float, shown: str) -> None:
    assert money(value) == "$" + shown
    assert agent_amount(value) == shown  # the supervisor's reasons use the same rule


@pytest.mark.parametrize(
    ("value", "shown"), [(9999.996, "$10,000"), (9999.994, "$9,999.99"), (12345.6, "$12,346")]
)
def test_money_band_follows_the_rounded_value(value: float, shown: str) -> None:
    assert money(value) == shown


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def test_a_budget_of_half_a_cent_is_said_as_such() -> None:
    clock, journaled = Clock(), []
    rule = AutoStop(
        {"price": {"per_hour": 3.6}, "budget": 0.005, "grace": 0},
        lambda kind, **fields: journaled.append(fields),
        clock,
    )
    clock.now += 6
    assert rule.check() == "budget: accrued 0.006 USD reached the budget of 0.005"  # not "of 0.01"


# -- budgets while the job runs ------------------------------------------------------------------------


def job_dir(agent: Path, job: str) -> Path:
    d = agent / "jobs" / job / "0"
    d.mkdir(parents=True)
    return d


def test_the_budget_follows_a_price_change_while_the_job_runs(tmp_path: Path) -> None:
    clock, journaled = Clock(), []
    mine = job_dir(tmp_path, "J")
    rule = AutoStop(
        {"price": {"per_hour": 3600.0}, "budget": 10.0, "grace": 0},
        lambda kind, **fields: journaled.append(fields),
        clock,
        files_dir=mine,
    )
    clock.now += 4
    assert rule.check() is None  # $4 of $10
    # gpudeck learns at T0+5 that the price doubled at T0+2 (the `price` op writes price.json).
    assert record_price(tmp_path, 7200.0, "USD", T0 + 2, now=T0 + 5) == {"recorded": True, "at": T0 + 2}
    clock.now = T0 + 6
    # $2 + 4 s × $2 = $10: the budget is spent (at the launch price it would be $6).
    assert rule.check() == "budget: accrued 10.00 USD reached the budget of 10.00"
    stop = [f for f in journaled if f.get("event") == "autostop"][0]["data"]
    assert stop["price_per_hour"] == 7200.0


def test_a_removed_price_is_said_once_and_the_budget_waits_for_a_price(tmp_path: Path) -> None:
    clock, journaled = Clock(), []
    mine = job_dir(tmp_path, "J")
    rule = AutoStop(
        {"price": {"per_hour": 3600.0}, "budget": 10.0, "grace": 0},
        lambda kind, **fields: journaled.append(fields),
        clock,
        files_dir=mine,
    )
    record_price(tmp_path, None, "USD", T0 + 3, now=T0 + 3)
    clock.now = T0 + 30
    assert rule.check() is None and rule.check() is None
    [said] = [f for f in journaled if f.get("event") == "budget_unenforced"]
    assert said["data"]["since"] == T0 + 3 and said["data"]["accrued"] == pytest.approx(3.0)
    record_price(tmp_path, 3600.0, "USD", T0 + 31, now=T0 + 31)
    clock.now = T0 + 38
    assert rule.check() == "budget: accrued 10.00 USD reached the budget of 10.00"  # $3 + 7 s × $1


def test_on_a_host_without_gpus_the_share_follows_a_neighbour_that_ends(tmp_path: Path) -> None:
    clock, journaled = Clock(), []
    mine = job_dir(tmp_path, "J")
    neighbour = job_dir(tmp_path, "N")
    fd = os.open(str(neighbour / "lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as its supervisor does for its lifetime
    try:
        # Launched beside the neighbour: half the host, $0.50/s.
        rule = AutoStop(
            {"price": {"per_hour": 3600.0, "share": 0.5}, "budget": 10.0, "grace": 0},
            lambda kind, **fields: journaled.append(fields),
            clock,
            files_dir=mine,
        )
        rule.on_gpus(None, "no NVIDIA GPU on this host")
        assert rule.check() is None
        clock.now += 4
        assert rule.check() is None  # $2
    finally:
        os.close(fd)  # the neighbour ends: its lock is free
    clock.now += 5
    assert rule.check() is None  # counted again now (every 5 s): alone from here
    clock.now += 4
    assert rule.accrued() == pytest.approx(2.0 + 2.5 + 4.0)  # launch share until seen alone, then all
    clock.now += 2
    assert rule.check() is not None  # $10.50 ≥ $10; with the launch share it would be $7.50


@pytest.mark.parametrize(
    ("mine", "launch", "others", "share"),
    [
        (["0"], 0.25, [], 0.25),  # one of 4 GPUs, alone on it
        (["0"], 0.25, [["0"]], 0.125),  # a neighbour on the same GPU: half of it
        (["0"], 0.25, [["1"]], 0.25),  # a neighbour on another GPU: nothing changes
        (["0", "1"], 0.5, [["1"], None], 0.125 + 1 / 12),  # GPU 0 with the all-GPU job, GPU 1 with both
        (None, 1.0, [None], 0.5),  # two jobs on every GPU
        (None, 1.0, [["1"]], None),  # cannot be told without the host's GPU count: launch share holds
    ],
)
def test_the_gpu_share_follows_the_jobs_on_the_same_gpus(mine, launch, others, share) -> None:  # type: ignore[no-untyped-def]
    assert gpu_share(mine, launch, others) == (pytest.approx(share) if share is not None else None)


def test_with_gpus_a_neighbour_on_the_same_gpu_halves_the_share_while_it_lives(tmp_path: Path) -> None:
    clock = Clock()
    mine = job_dir(tmp_path, "J")
    neighbour = job_dir(tmp_path, "N")
    (neighbour / "spec.json").write_text(json.dumps({"env": {"CUDA_VISIBLE_DEVICES": "0"}}))
    fd = os.open(str(neighbour / "lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        # GPU 0 of 2, launched alone on it: half the host at $3600/h, $0.50/s.
        rule = AutoStop(
            {
                "price": {"per_hour": 3600.0, "share": 0.5},
                "budget": 100.0,
                "grace": 0,
                "env": {"CUDA_VISIBLE_DEVICES": "0"},
            },
            lambda kind, **f: None,
            clock,
            files_dir=mine,
        )
        rule.on_gpus([90.0])
        assert rule.check() is None and rule.meter.share_at(clock.now) == pytest.approx(0.25)
        clock.now += 10
        assert rule.accrued() == pytest.approx(2.5)  # the neighbour shares GPU 0 from the start
    finally:
        os.close(fd)
    clock.now += 5
    rule.check()
    assert rule.meter.share_at(clock.now) == pytest.approx(0.5)  # alone again


def test_the_stop_starts_early_by_the_measured_stop_time(tmp_path: Path) -> None:
    # An earlier job on this host took 2 s to stop: the lead is 3 s (2 s + 1 s), under the 30 s grace.
    earlier = job_dir(tmp_path, "E")
    (earlier / "events.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"seq": 1, "t": 100.0, "kind": "state", "state": "running"},
                {"seq": 2, "t": 150.0, "kind": "event", "event": "stop_requested", "data": {}},
                {"seq": 3, "t": 152.0, "kind": "state", "state": "stopped"},
            ]
        )
        + "\n"
    )
    clock, journaled = Clock(), []
    rule = AutoStop(
        {"price": {"per_hour": 3600.0}, "budget": 10.0, "grace": 30},
        lambda kind, **fields: journaled.append(fields),
        clock,
        files_dir=job_dir(tmp_path, "J"),
    )
    clock.now += 6.9
    assert rule.check() is None  # $6.90 + 3 s × $1 < $10
    clock.now += 0.1
    reason = rule.check()
    assert (
        reason == "budget: accrued 7.00 USD, with 3.00 more over the stop (3 s), reaches the budget of 10.00"
    )
    stop = [f for f in journaled if f.get("event") == "autostop"][0]["data"]
    assert (stop["stop_lead_s"], stop["measured_stop_s"]) == (3.0, 2.0)


@pytest.mark.parametrize(("grace", "lead"), [(4, 4.0), (60, 10.0)])
def test_without_a_measured_stop_the_lead_is_10_s_within_the_grace(
    tmp_path: Path, grace: float, lead: float
) -> None:
    clock = Clock()
    rule = AutoStop(
        {"price": {"per_hour": 3600.0}, "budget": 30.0, "grace": grace},
        lambda kind, **f: None,
        clock,
        files_dir=job_dir(tmp_path, "J"),
    )
    clock.now += 29.9 - lead
    assert rule.check() is None
    clock.now += 0.1
    assert rule.check() is not None  # SIGKILL at the grace's end bounds a slower stop anyway
    assert rule.meter.lead == lead


def test_the_price_op_keeps_changes_in_order_and_refuses_bad_values(tmp_path: Path) -> None:
    assert record_price(tmp_path, 1.0, "usd", T0, now=T0)["recorded"]
    assert record_price(tmp_path, 1.0, "USD", T0 + 5, now=T0 + 5) == {"recorded": False, "at": T0}
    assert record_price(tmp_path, 2.0, "USD", T0 - 100, now=T0 + 10)["at"] == T0  # not before the last
    assert record_price(tmp_path, 3.0, "USD", T0 + 999, now=T0 + 20)["at"] == T0 + 20  # not in the future
    body = json.loads((tmp_path / "price.json").read_text())
    assert [c["per_hour"] for c in body["changes"]] == [1.0, 2.0, 3.0]
    assert oct((tmp_path / "price.json").stat().st_mode & 0o777) == "0o600"
    for bad in (float("nan"), -1, True, "5"):
        with pytest.raises(PriceError, match="per_hour"):
            record_price(tmp_path, bad, "USD", None)


# -- end to end: the CLI dates changes and tells the agent ---------------------------------------------


@pytest.mark.slow
def test_hosts_set_and_a_hand_edit_reach_the_ledger_and_the_agent_dated(
    gpudeck_home: Path, workdir: Path
) -> None:
    from tests.conftest import gpudeck

    hosts = gpudeck_home / "hosts.toml"
    hosts.write_text("[hosts.local]\nprice_per_hour = 3.6\n")
    edited = time.time() - 3600
    os.utime(hosts, (edited, edited))  # written an hour ago
    # Dated on the host's clock: the mtime plus the measured clock offset (~0 for local, with jitter).
    assert gpudeck("cost", "--json", cwd=workdir).returncode == 0
    agent_price = json.loads((gpudeck_home / "local-agent" / "price.json").read_text())["changes"]
    assert [(c["at"], c["per_hour"]) for c in agent_price] == [(pytest.approx(edited, abs=1), 3.6)]
    with Ledger(gpudeck_home / "state.db") as ledger:  # dated at the edit, not at this `cost` run
        assert [(r.at, r.per_hour) for r in ledger.prices("local")] == [(pytest.approx(edited, abs=1), 3.6)]

    removed = gpudeck("hosts", "set", "local", "price_per_hour=", cwd=workdir)
    assert removed.returncode == 0, removed.stderr
    with Ledger(gpudeck_home / "state.db") as ledger:
        last = ledger.prices("local")[-1]
    assert last.per_hour is None and last.at > edited + 3000  # billing ended when `hosts set` ran
    changes = json.loads((gpudeck_home / "local-agent" / "price.json").read_text())["changes"]
    assert changes[-1]["per_hour"] is None and changes[-1]["at"] == pytest.approx(last.at, abs=5)
    report = json.loads(gpudeck("cost", "--json", cwd=workdir).stdout)
    assert report["fleet"]["burn_usd_per_hour"] is None and report["fleet"]["unpriced_hosts"] == ["local"]


@pytest.mark.slow
def test_hosts_set_on_an_unreachable_host_still_sets_the_price_and_says_why_running_jobs_lag(
    gpudeck_home: Path, workdir: Path
) -> None:
    from tests.conftest import gpudeck

    (gpudeck_home / "hosts.toml").write_text(
        '[hosts.gpu1]\ntarget = "nobody@127.0.0.1:1"\n'
    )  # nothing listens
    result = gpudeck("hosts", "set", "gpu1", "price_per_hour=2", cwd=workdir)
    assert result.returncode == 0 and result.stdout == "gpu1: price_per_hour = 2.0\n"
    (line,) = result.stderr.splitlines()
    assert line.startswith("gpu1: running jobs keep their launch price until gpudeck reaches the host again")
    with Ledger(gpudeck_home / "state.db") as ledger:
        assert [r.per_hour for r in ledger.prices("gpu1")] == [2.0]
