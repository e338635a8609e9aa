"""Advice from real outputs, judged by a real supervisor (issue 34): an OOM traceback from the CPU
build's torch.OutOfMemoryError, a starving DataLoader, a GPU that raises an XID and ECC errors
(the fake NVML), and a clean run of the reference trainer that gets no advice at all."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.jobs import journal, launch, wait_state
from tests.support.trainer_runs import TINY
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

pytestmark = pytest.mark.slow  # real torch jobs under a real agent
torch = pytest.importorskip("torch")

FAKE_DIR = Path(__file__).resolve().parent / "fakes" / "nvml"
UUID = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
GIB = 1024**3
ON_GPU0 = {"CUDA_VISIBLE_DEVICES": "0"}  # the job's GPU is the fake's first

# How CUDA's caching allocator words it (torch 2.x); the CPU build raises the same class.
OOM_SCRIPT = """
import json, os, sys, time
import torch
batch = int(sys.argv[sys.argv.index("--batch-size") + 1])
model = torch.nn.Linear(64, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in (1, 2):
    loss = model(torch.randn(batch, 64)).pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad()
    print(json.dumps({"step": step, "loss": loss.item()}), flush=True)
journal = os.path.join(os.environ["GPUDECK_JOB_DIR"], "events.jsonl")
deadline = time.monotonic() + 60
while time.monotonic() < deadline:  # the supervisor has looked at the GPU (78 GiB in use)
    with open(journal) as f:
        if any(json.loads(line).get("kind") == "gpu" for line in f if line.endswith("\\n")):
            break
    time.sleep(0.05)
raise torch.OutOfMemoryError(
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which "
    "1.06 GiB is free. Of the allocated memory 76.12 GiB is allocated by PyTorch"
)
"""

# A data set that waits on every item while another thread keeps the process's core busy: the GPU
# waits for batches, the CPU is saturated.
LOADER_SCRIPT = """
import json, threading, time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 10**6
    def __getitem__(self, i):
        time.sleep(0.02)
        return torch.randn(8)

def spin():
    x = 0
    while True:
        x += 1

threading.Thread(target=spin, daemon=True).start()
for step, batch in enumerate(DataLoader(Slow(), batch_size=4, num_workers=0), 1):
    print(json.dumps({"step": step, "loss": float(batch.mean())}), flush=True)
"""


@pytest.fixture
def health(tmp_path: Path) -> Path:
    path = tmp_path / "gpu-health.json"
    path.write_text(json.dumps({UUID: {"xid": [], "ecc": {"volatile": {"corrected": 0, "uncorrected": 0}}}}))
    return path


@contextmanager
def gpu_client(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch, health: Path, **gpu: Any
) -> Iterator[AgentClient]:
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([dict(uuid=UUID, **gpu)]))
    monkeypatch.setenv("PYNVML_FAKE_HEALTH", str(health))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_DIR), os.environ.get("PYTHONPATH", "")]))
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    yield client
    client.close()


def advice(agent_dir: Path, job_id: str) -> list[dict[str, Any]]:
    return [
        r["data"]
        for r in journal(agent_dir, job_id)
        if r.get("kind") == "event" and r.get("event") == "advice"
    ]


def test_an_oom_traceback_gives_the_oom_advice_with_the_batch_and_the_gpus_peak(
    agent_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, health: Path
) -> None:
    (workdir / "train.py").write_text(OOM_SCRIPT)
    with gpu_client(agent_dir, monkeypatch, health, mem_used=78 * GIB, util=97) as client:
        job = launch(
            client,
            workdir,
            [sys.executable, "train.py", "--batch-size", "256"],
            env=ON_GPU0,
            gpu_interval=0.2,
        )
        final = wait_state(client, job["id"], {"failed"}, timeout=90)
    [oom] = advice(agent_dir, job["id"])
    assert oom["kind"] == "oom"
    evidence = oom["evidence"]
    assert evidence["batch_size"] == 256 and evidence["tried_to_allocate"] == "2.00 GiB"
    assert evidence["line"].startswith("torch.OutOfMemoryError: CUDA out of memory.")
    [g] = evidence["gpus"]
    assert (g["uuid"], g["peak_mib"], g["mem_total_mib"]) == (UUID, 78 * 1024, 80 * 1024)
    assert oom["why"] == "CUDA out of memory at batch 256; GPU 0 peak 78.0 of 80.0 GiB"
    remedies = oom["remedies"]
    assert "halve the batch (to 128) with gradient accumulation" in remedies[0]
    assert "mixed precision" in remedies[1] and "checkpointing" in remedies[2] and "FSDP" in remedies[3]
    [said] = final["advice"]  # the job object carries it
    assert said["kind"] == "oom" and said["remedies"] == remedies


def test_a_starving_data_loader_gives_the_loader_advice(
    agent_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, health: Path
) -> None:
    (workdir / "train.py").write_text(LOADER_SCRIPT)
    with gpu_client(agent_dir, monkeypatch, health, mem_used=4 * GIB, util=12) as client:
        job = launch(client, workdir, [sys.executable, "train.py"], env=ON_GPU0, gpu_interval=0.3)
        [said] = wait_for(lambda: advice(agent_dir, job["id"]), timeout=90, what="the loader advice")
        client.request("kill", job=job["id"], node="0")
    assert said["kind"] == "loader"
    evidence = said["evidence"]
    assert evidence["gpu_util_mean_pct"] == 12 and evidence["busiest_process_cores"] >= 0.8
    assert said["remedies"][0].startswith("raise the DataLoader's num_workers")
    assert "pin_memory" in said["remedies"][1] and "prefetch_factor" in said["remedies"][2]


def test_an_xid_and_ecc_errors_on_the_jobs_gpu_flag_it(
    agent_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, health: Path
) -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(300)"]
    with gpu_client(agent_dir, monkeypatch, health, mem_used=4 * GIB, util=90) as client:
        job = launch(client, workdir, sleep, env=ON_GPU0, gpu_interval=0.2)
        wait_for(  # the job's first look at its GPU: the counts it started with
            lambda: any(r.get("kind") == "gpu" for r in journal(agent_dir, job["id"])), what="a GPU sample"
        )
        assert advice(agent_dir, job["id"]) == []
        health.write_text(
            json.dumps({UUID: {"xid": [79], "ecc": {"volatile": {"corrected": 0, "uncorrected": 3}}}})
        )
        [said] = wait_for(lambda: advice(agent_dir, job["id"]), what="the GPU health advice")
        [seen] = client.request("gpus")["gpus"]  # the fleet's host panel and `hosts check` read this
        assert seen["health"]["flag"] == "3 uncorrected ECC errors"  # this serve's event set came later
        assert seen["health"]["ecc"]["volatile"] == {"corrected": 0, "uncorrected": 3}
        flagged = wait_state(client, job["id"], {"running"})["advice"]
        client.request("kill", job=job["id"], node="0")
    assert said["kind"] == "gpu_health"
    assert said["why"] == "GPU 0: XID 79 (GPU has fallen off the bus); 3 uncorrected ECC errors"
    assert [g["uuid"] for g in said["evidence"]["gpus"]] == [UUID]
    assert [a["kind"] for a in flagged] == ["gpu_health"]


def test_a_clean_run_of_the_reference_trainer_gets_no_advice(
    agent_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, health: Path
) -> None:
    argv = [sys.executable, "-m", "trainer", "--steps", "30", *TINY, "--checkpoint-dir", "ck"]
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    with gpu_client(agent_dir, monkeypatch, health, mem_used=20 * GIB, util=95) as client:
        job = launch(client, workdir, argv, env=ON_GPU0, gpu_interval=0.2)
        final = wait_state(client, job["id"], {"exited", "failed"}, timeout=120)
    assert final["state"] == "exited", final.get("tail")
    records = journal(agent_dir, job["id"])
    assert sum(r.get("kind") == "gpu" for r in records) >= 1  # it was looked at while it ran
    assert advice(agent_dir, job["id"]) == [] and final["advice"] == []
