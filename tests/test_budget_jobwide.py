"""Issue 29, finding 6: a budget is the job's, across its nodes: a 2-node job with --budget 20 at
3,600 USD/h ends at its budget by the journal (both nodes stopped), not at twice it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.node_journals import final, records, spent
from tests.support.waiting import wait_for


@pytest.mark.slow  # the job runs until its budget: ~20 s
@pytest.mark.timeout(120)
def test_a_two_node_job_with_a_20_usd_budget_ends_at_its_budget(agent_dir: Path, workdir: Path) -> None:
    run = gpudeck(
        "run", "--name", "b2", "--nodes", "2", "--launcher", "none", "--budget", "20",
        "--price-per-hour", "3600", "--grace", "1",
        "--", sys.executable, "-c", "import time; time.sleep(300)",
        cwd=workdir,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    job = run.stdout.strip()
    ends = wait_for(
        lambda: (
            all(final(records(agent_dir, job, n)) for n in "01")
            and [final(records(agent_dir, job, n)) for n in "01"]
        ),
        timeout=90,
        interval=0.2,
        what="both nodes' ends",
    )
    assert [e["state"] for e in ends] == ["stopped", "stopped"], ends
    assert all(e["reason"].startswith("budget: ") for e in ends), ends
    total = sum(spent(records(agent_dir, job, n)) for n in "01")
    print(
        f"2-node job, budget 20 USD at 3600 USD/h: {total:.2f} USD spent by the journal"
    )  # the note's figure
    assert total <= 20.5, total
    assert total >= 15, total  # it ran until near its budget, not stopped at once
