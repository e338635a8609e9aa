"""Budgets and idle stops, enforced by the job's supervisor with no client connected."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from remote_agent.supervision.autostop import AutoStop
from tests.support.jobs import journal, launch, wait_state
from tui.remote.client import AgentClient, AgentError
from tui.remote.transport import LocalTransport

FAKE_DIR = Path(__file__).resolve().parent / "fakes" / "nvml"
SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]


def events(agent_dir: Path, job_id: str, name: str) -> list[dict]:
    return [r for r in journal(agent_dir, job_id) if r["kind"] == "event" and r["event"] == name]


@pytest.mark.slow
def test_budget_warns_at_80_percent_then_stops_the_job(agent_dir: Path, workdir: Path) -> None:
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    # 3600 USD/h at half the host is 0.5 USD/s: a 1.5 USD budget lasts 3 s. With a grace of 1 s and no
    # stop measured on this host yet, the stop starts 1 s (0.50 USD) early, so the job ends on budget.
    job = launch(
        client,
        workdir,
        SLEEP,
        price={"per_hour": 3600.0, "share": 0.5, "currency": "USD"},
        budget=1.5,
        grace=1,
        # No GPU sample in the job's 3 s: the first one (no driver here) makes jobs split the host,
        # and this job alone would then count the whole host (share 1.0), not the spec's 0.5.
        gpu_interval=3600.0,
    )
    client.close()  # nobody watches: the supervisor alone must enforce it
    second = AgentClient(LocalTransport(agent_dir))
    second.connect()
    try:
        final = wait_state(second, job["id"], {"stopped"}, timeout=20)
    finally:
        second.close()
    assert (
        final["reason"].startswith("budget: accrued 1.0")
        and "with 0.500 more over the stop (1 s)" in final["reason"]
    )
    assert final["reason"].endswith("reaches the budget of 1.50")
    [warning] = events(agent_dir, job["id"], "budget_warning")
    assert warning["data"]["accrued"] >= 1.0 and warning["data"]["share"] == 0.5
    [stop] = events(agent_dir, job["id"], "autostop")
    assert stop["data"]["rule"] == "budget" and 1.0 <= stop["data"]["accrued"] < 1.5
    assert stop["data"]["stop_lead_s"] == 1.0 and stop["data"]["during_stop"] == 0.5
    # What the job cost, from the journal's own times: it ended on budget, not over it.
    records = journal(agent_dir, job["id"])
    ran = next(r["t"] for r in records if r.get("state") == "stopped") - next(
        r["t"] for r in records if r.get("state") == "running"
    )
    assert ran * 0.5 <= 1.5, ran
    assert warning["seq"] < stop["seq"]


def test_a_budget_without_a_price_is_refused(client: AgentClient, workdir: Path) -> None:
    with pytest.raises(AgentError, match=r"spec\.budget: needs spec\.price\.per_hour"):
        launch(client, workdir, SLEEP, budget=10)


@pytest.fixture
def idle_gpu_client(agent_dir: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(
        "PYNVML_FAKE", json.dumps([{"uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000", "util": 2}])
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_DIR), os.environ.get("PYTHONPATH", "")]))
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    yield client
    client.close()


@pytest.mark.slow
def test_idle_gpus_stop_the_job_unless_paused(
    idle_gpu_client: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    idle = {"below_pct": 10, "minutes": 0.02, "grace_minutes": 0}
    paused = launch(
        idle_gpu_client, workdir, SLEEP, env={"CUDA_VISIBLE_DEVICES": "0"}, idle_stop=idle, gpu_interval=0.2
    )
    idle_gpu_client.request("autostop", job=paused["id"], node="0", paused=True)
    job = launch(
        idle_gpu_client, workdir, SLEEP, env={"CUDA_VISIBLE_DEVICES": "0"}, idle_stop=idle, gpu_interval=0.2
    )
    final = wait_state(idle_gpu_client, job["id"], {"stopped"}, timeout=20)
    assert final["reason"].startswith("idle: GPU utilization under 10%")
    [stop] = events(agent_dir, job["id"], "autostop")
    assert stop["data"]["rule"] == "idle" and stop["data"]["idle_seconds"] >= 1.2
    # The paused one outlived it and says so in its journal.
    assert wait_state(idle_gpu_client, paused["id"], {"running"})["state"] == "running"
    assert events(agent_dir, paused["id"], "autostop_paused")
    idle_gpu_client.request("kill", job=paused["id"], node="0")


def test_idle_stop_on_a_host_without_gpus_says_it_cannot_apply(
    client: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    job = launch(
        client,
        workdir,
        SLEEP,
        idle_stop={"below_pct": 10, "minutes": 0.01, "grace_minutes": 0},
        gpu_interval=0.2,
    )
    from tests.support.waiting import wait_for

    [said] = wait_for(
        lambda: events(agent_dir, job["id"], "idle_stop_unavailable"), what="the unavailable event"
    )
    assert "no NVIDIA GPU" in said["data"]["reason"]
    assert client.request("kill", job=job["id"], node="0")["state"] == "killed"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_idle_rule_counts_only_all_idle_stretches_after_the_grace() -> None:
    journaled: list[tuple] = []
    clock = FakeClock()
    rule = AutoStop(
        {"idle_stop": {"below_pct": 10, "minutes": 30, "grace_minutes": 15}},
        lambda *a, **k: journaled.append((a, k)),
        clock,
    )
    rule.on_gpus([5.0, 3.0])
    clock.now += 29 * 60
    assert rule.check() is None
    rule.on_gpus([5.0, 50.0])  # one busy GPU resets the stretch
    rule.on_gpus([5.0, 3.0])
    clock.now += 29 * 60
    assert rule.check() is None
    clock.now += 60
    assert rule.check() == "idle: GPU utilization under 10% for 30 min"
    assert journaled[-1][1]["data"]["rule"] == "idle"


def test_no_idle_stop_during_the_start_grace() -> None:
    clock = FakeClock()
    rule = AutoStop(
        {"idle_stop": {"below_pct": 10, "minutes": 5, "grace_minutes": 15}}, lambda *a, **k: None, clock
    )
    rule.on_gpus([0.0])  # idle from the first sample: data loading, compilation, warm-up
    clock.now += 10 * 60
    assert rule.check() is None  # idle for 10 min > 5, but still inside the 15 min grace
    clock.now += 5 * 60 - 1
    assert rule.check() is None
    clock.now += 1
    assert rule.check() == "idle: GPU utilization under 10% for 15 min"
