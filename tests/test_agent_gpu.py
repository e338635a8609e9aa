"""GPU readings through the whole agent, with NVML faked at its import boundary (the only fake)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from remote_agent.supervision.steady import STEADY_EVERY
from tests.support.jobs import journal, launch
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

FAKE_DIR = Path(__file__).resolve().parent / "fakes" / "nvml"
UUID0 = "GPU-11111111-2222-3333-4444-555555555555"
UUID1 = "GPU-66666666-7777-8888-9999-000000000000"
MIB = 1024 * 1024


@pytest.fixture
def gpu_client(agent_dir: Path, monkeypatch: pytest.MonkeyPatch):
    gpus = [
        {"uuid": UUID0, "name": "NVIDIA H100 80GB HBM3", "util": 3, "mem_used": 1024 * MIB},
        {
            "uuid": UUID1,
            "name": "NVIDIA H100 80GB HBM3",
            "util": 97,
            "mem_used": 70_000 * MIB,
            "temp": 71,
            "power_mw": 650_000,
        },
    ]
    monkeypatch.setenv("PYNVML_FAKE", json.dumps(gpus))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_DIR), os.environ.get("PYTHONPATH", "")]))
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    yield client
    client.close()


def test_hello_and_gpus_report_the_inventory(gpu_client: AgentClient) -> None:
    hello = gpu_client.request("hello")
    assert hello["gpu"]["available"] is True and hello["gpu"]["reason"] is None
    assert [g["uuid"] for g in hello["gpu"]["gpus"]] == [UUID0, UUID1]
    sample = gpu_client.request("gpus")
    busy = sample["gpus"][1]
    assert (busy["util"], busy["mem_used_mib"], busy["temp_c"], busy["power_w"]) == (97, 70_000, 71, 650.0)


def test_the_job_journal_samples_only_the_jobs_gpus(
    gpu_client: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    job = launch(
        gpu_client,
        workdir,
        [sys.executable, "-c", "import time; time.sleep(30)"],
        env={"CUDA_VISIBLE_DEVICES": "1"},
        gpu_interval=0.2,
    )
    records = wait_for(
        lambda: [r for r in journal(agent_dir, job["id"]) if r["kind"] == "gpu"], what="a gpu record"
    )
    assert records[0]["gpus"] == [
        {
            "uuid": UUID1,
            "index": 1,
            "util": 97,
            "mem_used_mib": 70_000,
            "mem_total_mib": 81920,
            "temp_c": 71,
            "power_w": 650.0,
        }
    ]
    gpu_client.request("kill", job=job["id"], node="0")


@pytest.mark.slow
def test_serve_keeps_a_1hz_ring_of_gpu_readings(gpu_client: AgentClient) -> None:
    from tests.support.waiting import wait_for

    history = wait_for(
        lambda: gpu_client.request("gpus", history_since=0)["history"][1:],
        timeout=10,
        what="two ring readings",
    )
    assert [g["util"] for g in history[0]["gpus"]] == [3, 97]
    later = gpu_client.request("gpus", history_since=history[-1]["t"])["history"]
    assert all(p["t"] > history[-1]["t"] for p in later)


def test_no_ring_without_a_driver(client: AgentClient) -> None:
    assert client.request("gpus", history_since=0)["history"] == []


@pytest.mark.slow  # ~2 s: a job sampled for STEADY_EVERY intervals, twice
def test_a_quiet_job_on_a_steady_gpu_journals_a_repeat_every_steady_interval(gpu_client: AgentClient, agent_dir: Path,
                                                                               workdir: Path) -> None:  # fmt: skip
    interval = 0.1
    job = launch(gpu_client, workdir, [sys.executable, "-c", "import time; time.sleep(30)"],
                 env={"CUDA_VISIBLE_DEVICES": "1"}, gpu_interval=interval, heartbeat_interval=interval)  # fmt: skip

    def kinds() -> dict[str, list[dict]]:
        records = journal(agent_dir, job["id"])
        out = {k: [r for r in records if r["kind"] == k] for k in ("gpu", "heartbeat")}
        return out if all(len(v) >= 3 for v in out.values()) else {}

    seen = wait_for(kinds, timeout=30, what="three gpu records and three heartbeats")
    gpu_client.request("kill", job=job["id"], node="0")
    for (
        records
    ) in seen.values():  # the same reading, the same offset: one per STEADY_EVERY intervals, not one each
        gaps = [b["t"] - a["t"] for a, b in zip(records, records[1:])]  # noqa: B905
        assert min(gaps) >= (STEADY_EVERY - 1) * interval, gaps
    assert seen["gpu"][0]["gpus"] == seen["gpu"][-1]["gpus"]
