"""`gpudeck cost --json` end to end: real local jobs, a price from hosts.toml, figures checked against
a hand calculation from the journal's own timestamps (the host's clock)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for
from tests.test_prices_catalog import cli
from tui.cost.ledger import Ledger

# Slow as a whole: jobs run long enough to cost something: seconds each.
pytestmark = pytest.mark.slow

STEPS = """
import json, sys, time
total = int(sys.argv[1])
for step in range(1, total + 1):
    print(json.dumps({"step": step, "total_steps": total, "loss": 1.0 / step}), flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _metrics(home: Path, job_id: str) -> int:
    try:
        return sum(r["kind"] == "metric" for r in journal(home, job_id))
    except (OSError, ValueError):
        return 0


def cost_json(cwd: Path, *extra: str) -> dict[str, Any]:
    result = cli("cost", "--json", *extra, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def journal(home: Path, job_id: str) -> list[dict[str, Any]]:
    path = home / "local-agent" / "jobs" / job_id / "0" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def state_t(records: list[dict[str, Any]], state: str) -> float:
    return next(r["t"] for r in records if r["kind"] == "state" and r["state"] == state)


def ended(home: Path, job_id: str) -> bool:
    """Read the journal itself: polling `gpudeck ps` would start an interpreter per poll."""
    try:
        records = journal(home, job_id)
    except (OSError, ValueError):  # not created yet, or a line being written
        return False
    return any(
        r["kind"] == "state" and r["state"] in ("exited", "failed", "stopped", "killed") for r in records
    )


def test_cost_json_matches_hand_calculation(gpudeck_home: Path, workdir: Path) -> None:
    (gpudeck_home / "hosts.toml").write_text("[hosts.local]\nprice_per_hour = 3.6  # $0.001 a second\n")
    short = gpudeck(
        "run", "--name", "short", "--", sys.executable, "-c", STEPS, "10", "0.05", cwd=workdir
    ).stdout.strip()
    wait_for(lambda: ended(gpudeck_home, short), timeout=30, what="short job exited")

    long = gpudeck(
        "run",
        "--name",
        "long",
        "--grace",
        "5",
        "--",
        sys.executable,
        "-c",
        STEPS,
        "100000",
        "0.02",
        cwd=workdir,
    ).stdout.strip()
    wait_for(lambda: _metrics(gpudeck_home, long) >= 10, timeout=30, what="progress")
    live = cost_json(workdir)
    [host] = live["hosts"]
    assert host["name"] == "local" and host["price"] == {
        "per_hour": 3.6,
        "currency": "USD",
        "market": "on-demand",
        "source": "hosts.toml price_per_hour",
    }
    assert host["burn_usd_per_hour"] == 3.6  # the host is billed whether or not a job runs
    jobs = {j["id"]: j for j in live["jobs"]}
    running = jobs[long]
    assert (
        running["state"] == "running" and running["burn_usd_per_hour"] == 3.6
    )  # alone on a no-GPU host: share 1
    assert running["accrued_usd"] > 0 and running["steps_per_s"] > 0
    # Projected = accrued + burn × steps left / rate: ~100 000 steps at ≤ 50/s is over half an hour.
    assert running["projected_usd"] > running["accrued_usd"] + 1.5

    assert gpudeck("stop", long, cwd=workdir).returncode == 0
    final = {j["id"]: j for j in cost_json(workdir)["jobs"]}
    for job_id in (short, long):
        records = journal(gpudeck_home, job_id)
        end = next(r["t"] for r in records if r["kind"] == "state" and r["state"] in ("exited", "stopped"))
        # The two never overlapped, so each paid the whole host: seconds × $0.001.
        expected = (end - state_t(records, "running")) * 3.6 / 3600
        assert final[job_id]["accrued_usd"] == pytest.approx(expected, abs=1e-6)
        assert round(final[job_id]["accrued_usd"], 2) == round(expected, 2)  # to the cent
        assert final[job_id]["projected_usd"] == final[job_id]["accrued_usd"]  # it is over
        assert (
            final[job_id]["burn_usd_per_hour"] == 0 and final[job_id]["idle_usd"] == 0
        )  # no GPU: no idle samples
    assert final[long]["state"] == "stopped" and final[long]["reason"]

    with Ledger(gpudeck_home / "state.db") as ledger:
        kinds = [(f.kind, f.job) for f in ledger.facts()]
        price = ledger.prices("local")
    assert ("job_start", short) in kinds and ("job_end", short) in kinds and ("job_end", long) in kinds
    assert price[0].per_hour == 3.6 and price[0].source == "hosts.toml price_per_hour"

    # The short job's directory goes; its cost stays answerable from the ledger.
    assert gpudeck("rm", short, cwd=workdir).returncode == 0
    since = {j["id"]: j for j in cost_json(workdir, "--since", "1d")["jobs"]}
    assert since[short]["from"] == "ledger" and since[short]["accrued_usd"] == final[short]["accrued_usd"]


def test_cost_without_a_price_says_unknown(gpudeck_home: Path, workdir: Path) -> None:
    job = gpudeck("run", "--", "true", cwd=workdir).stdout.strip()
    wait_for(lambda: ended(gpudeck_home, job), timeout=30, what="exited")
    report = cost_json(workdir)
    [host] = report["hosts"]
    assert host["price"]["per_hour"] is None and host["burn_usd_per_hour"] is None
    [row] = report["jobs"]
    assert row["accrued_usd"] is None and row["price_unknown_on"] == ["local"]  # unknown, not $0
    assert "unknown" in cli("cost", cwd=workdir).stdout
    bad = cli("cost", "--since", "last tuesday", cwd=workdir)
    assert bad.returncode != 0 and "--since" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_budget_stop_by_the_supervisor_shows_in_cost_and_ledger(
    gpudeck_home: Path, workdir: Path, client
) -> None:  # type: ignore[no-untyped-def]
    """The spec fields from tui.cost.rules, enforced on the host: $3600/h = $1/s, budget $2."""
    from remote_agent.supervision import jobspec
    from tests.support.jobs import launch
    from tui.cost.rules import spec_cost_fields

    if "budget" not in Path(jobspec.__file__).read_text():
        pytest.skip("this agent does not enforce budgets yet")
    settings = {"price_per_hour": 3600}
    (gpudeck_home / "hosts.toml").write_text("[hosts.local]\nprice_per_hour = 3600\n")
    sleeper = (
        "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\ntime.sleep(60)"
    )
    job = launch(
        client, workdir, [sys.executable, "-c", sleeper], grace=1, **spec_cost_fields(settings, budget=2.0)
    )
    client.close()  # nobody watches: the supervisor alone stops it
    wait_for(lambda: ended(gpudeck_home, job["id"]), timeout=30, what="budget stop")
    records = journal(gpudeck_home, job["id"])
    events = [r["event"] for r in records if r["kind"] == "event"]
    assert "budget_warning" in events and "autostop" in events
    [row] = [j for j in cost_json(workdir)["jobs"] if j["id"] == job["id"]]
    assert row["state"] == "stopped" and row["reason"].startswith("budget")
    # The stop started a grace (1 s = $1) before the budget ran out, so the job ended on budget.
    assert 1.0 <= row["accrued_usd"] <= 2.0
    assert row["budget"] == 2.0 and row["budget_status"] != "over"
    with Ledger(gpudeck_home / "state.db") as ledger:
        kinds = {f.kind for f in ledger.facts() if f.job == job["id"]}
    assert {"budget_warning", "autostop", "budget_stop", "job_end"} <= kinds
