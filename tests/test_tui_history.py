"""A home full of ended jobs: the app starts without repeating old "job ended" notices, and every
job shows its real state from the first draw; their journals are not replayed at all (issue 36: the
agent's cost summaries give their cost), while a job object without one waits for its journal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.jobs import launch, wait_state
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.fleet import Fleet
from tui.remote.client import AgentClient
from tui.widgets.job_stats import cost_line
from tui.widgets.jobs_table import JobsTable, job_row

POINTS = "import json\nfor i in range(1, 2501): print(json.dumps({'step': i, 'loss': 1 / i}))\n"


def make_history(client: AgentClient, workdir: Path) -> dict[str, str]:
    """15 ended jobs with 2500 metric points each (more than one push): exited, failed and stopped ones."""
    want: dict[str, str] = {}
    started = []
    for i in range(15):
        kind = ("exited", "failed", "stopped")[i % 3]
        tail = {"exited": "", "failed": "raise SystemExit(3)\n", "stopped": "import time\ntime.sleep(600)\n"}[
            kind
        ]
        job = launch(client, workdir, [sys.executable, "-c", POINTS + tail], name=f"old-{i}")
        started.append((job["id"], kind))
    for job_id, kind in started:
        if kind == "stopped":
            wait_state(client, job_id, {"running"})
            client.request("stop", job=job_id, node="0", grace=5, timeout=60)
        want[job_id] = wait_state(client, job_id, {"exited", "failed", "stopped"})["state"]
        assert want[job_id] == kind
    return want


def read_whole(job: Any) -> bool:
    return all(n.remote_last_seq is not None and n.last_seq >= n.remote_last_seq for n in job.nodes.values())


@pytest.mark.slow
@sync
async def test_a_home_of_ended_jobs_starts_quietly_with_real_states(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = make_history(client, workdir)
    shown: list[dict[str, str]] = []  # each draw of the jobs table: job id -> state cell
    real_show = JobsTable.show

    def show(self: JobsTable, *args: Any) -> None:
        real_show(self, *args)
        shown.append({job_id: str(row[2]) for job_id, row in self._rows.items()})

    monkeypatch.setattr(JobsTable, "show", show)
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("2")  # the jobs table is drawn only while its tab is shown
        # Each job a summary from the start: its cost from the agent's cost summary, not one record
        # of its journal read, no series held (issues 17 and 36: ended jobs cost no memory per point).
        await until(
            pilot,
            lambda: (
                set(app.fleet.jobs) == set(want)
                and all(j.summarised and j.caught_up for j in app.fleet.jobs.values())
                and all(j.id in app.fleet.costs.jobs for j in app.fleet.jobs.values())
            ),
            "every job listed as a summary",
            timeout=60,
        )
        assert not any(read_whole(j) or j.has_history for j in app.fleet.jobs.values())
        await pilot.pause()
        for draw in shown:
            assert {job_id: draw[job_id] for job_id in draw} == {job_id: want[job_id] for job_id in draw}
        assert shown and shown[-1] == want
        for job in app.fleet.jobs.values():
            assert job.last["loss"] == pytest.approx(1 / 2500) and job.step == 2500
        assert not [n.message for n in app._notifications if n.title == "job ended"]


def test_an_ended_jobs_cost_waits_for_its_journal() -> None:
    """A part of a journal would show too small a cost: "…" until it is read, then the cost (here
    "—": no price)."""
    fleet = Fleet(clock=lambda: 0.0)
    fleet.apply_jobs(
        "local",
        [
            {
                "id": "20261201-000000-aaaaaa",
                "name": "old",
                "node": "0",
                "state": "exited",
                "exit_code": 0,
                "last_seq": 2,
            }
        ],
    )
    job = fleet.jobs["20261201-000000-aaaaaa"]
    assert str(job_row(job, fleet, 0.0)[8]) == "…" and "reading" in str(cost_line(job, fleet))
    fleet.apply_events(
        "local",
        job.id,
        "0",
        [
            {"seq": 1, "t": 1.0, "kind": "state", "state": "running"},
            {"seq": 2, "t": 2.0, "kind": "state", "state": "exited", "exit_code": 0},
        ],
    )
    assert job.caught_up and job.state == "exited"
    assert str(job_row(job, fleet, 0.0)[8]) == "—" and "reading" not in str(cost_line(job, fleet))
