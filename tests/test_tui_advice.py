"""The TUI's job view shows a job's advice (remote_agent/advice/) in a panel of its own, from the
agent's job object and from the journal's `advice` events as they come; no advice, no panel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.fleet import Fleet
from tui.screens.job import JobScreen
from tui.widgets.host_panel import host_lines
from tui.widgets.job_advice import JobAdvice

JOB = "20261201-000100-bbbbbb"
NCCL = {
    "kind": "nccl",
    "why": "NCCL error on node 1: x",
    "evidence": {"line": "x"},
    "remedies": ["NCCL_DEBUG=INFO"],
}


def test_the_fleet_model_carries_advice_from_job_objects_and_journal_events() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    nodes = [
        {"host": "a", "node": "0", "state": "running", "advice": []},
        {"host": "b", "node": "1", "state": "running", "advice": [dict(NCCL, t=900.0)]},
    ]
    changes = fleet.apply_jobs("a", [{"id": JOB, "state": "running", "nodes": nodes}])
    job = fleet.jobs[JOB]
    assert "advice" in changes and [(a["kind"], a["node"]) for a in job.advice] == [("nccl", "1")]
    tags = job.apply_record("a", job.nodes["0"], {"kind": "event", "event": "advice", "data": NCCL}, 950.0)
    assert tags is not None and "advice" in tags
    [merged] = job.advice  # one finding, said first by node 1, by both
    assert (merged["node"], sorted(merged["nodes"])) == ("1", ["0", "1"])
    garbage = {"kind": "event", "event": "advice", "data": {"kind": 3}}
    job.apply_record("a", job.nodes["0"], garbage, 960.0)
    assert len(job.advice) == 1


@pytest.mark.slow
@sync
async def test_the_job_view_shows_an_oom_jobs_advice(gpudeck_home: Path, workdir: Path) -> None:
    script = 'echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"; exec sleep 300'
    job_id = subprocess.run(
        [sys.executable, "-m", "tui", "run", "--", "bash", "-c", script, "train", "--batch-size", "64"],
        capture_output=True, text=True, cwd=workdir, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    try:
        app = GpuDeckApp(store=None)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: job_id in app.fleet.jobs, "the job listed")
            app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, job_id))
            await until(
                pilot,
                lambda: (
                    isinstance(app.screen, JobScreen) and any(w.display for w in app.screen.query(JobAdvice))
                ),
                "the advice panel shown",
            )
            text = str(app.screen.query_one(JobAdvice).content)
            assert "advice, CUDA out of memory: CUDA out of memory at batch 64" in text
            assert "1. halve the batch (to 32) with gradient accumulation" in text
    finally:
        subprocess.run(
            [sys.executable, "-m", "tui", "kill", job_id], cwd=workdir, timeout=60, capture_output=True
        )


def test_the_host_panel_marks_a_gpu_the_agent_flags_in_red_at_any_width() -> None:
    flag = "XID 79 (GPU has fallen off the bus); 3 uncorrected ECC errors"
    fleet = Fleet(clock=lambda: 1000.0)
    gpus = [
        {"index": 0, "uuid": "GPU-a", "name": "H100", "util": 90, "health": {"xid": [79], "flag": flag}},
        {"index": 1, "uuid": "GPU-b", "name": "H100", "util": 90, "health": {"xid": [], "flag": None}},
        {"index": 2, "uuid": "GPU-c", "name": "H100", "util": 90, "health": {"flag": ["[b]not text"]}},
    ]
    fleet.apply_gpus("box", {"available": True, "gpus": gpus})
    fleet.set_host_status("box", "connected")
    assert [g.health for g in fleet.hosts["box"].gpus] == [flag, None, None]  # garbage is no flag
    for width in (200, 76):  # the two-line rows, and the compact one-line rows of a narrow panel
        lines = host_lines(fleet.hosts["box"], fleet, 1000.0, width)
        flagged = [line for line in lines if "⚠" in line.plain]
        assert len(flagged) == 1 and "XID 79" in flagged[0].plain, [line.plain for line in lines]
        assert any(span.style == "$error" for span in flagged[0].spans)
