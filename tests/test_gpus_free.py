"""GPUs proven free after a job's end (remote_agent/gpus/leftover.py): real processes, a fake NVML
whose compute-process list a test writes (tests/fakes/nvml: $PYNVML_FAKE_PROCS)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import alive, journal, launch, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

FAKE_DIR = Path(__file__).resolve().parent / "fakes" / "nvml"
GPU0 = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
GIB = 1024**3
SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]
# The job's command starts a process in its own session (it escapes the group, as torchrun's
# workers do; it keeps the job's marker) that ignores SIGTERM, writes its pid, and would hold a GPU.
ESCAPING = [
    sys.executable,
    "-c",
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import os, signal, time\\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    'open("holder.pid", "w").write(str(os.getpid()))\\n'
    "time.sleep(600)'], start_new_session=True)\n"
    "time.sleep(600)",
]


@pytest.fixture
def procs_file(tmp_path: Path) -> Path:
    return tmp_path / "gpu-procs.json"


@pytest.fixture
def gpu_client(agent_dir: Path, procs_file: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentClient]:
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([{"uuid": GPU0, "util": 97}]))
    monkeypatch.setenv("PYNVML_FAKE_PROCS", str(procs_file))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_DIR), os.environ.get("PYTHONPATH", "")]))
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    yield client
    client.close()


def hold(procs_file: Path, pid: int, gib: int = 38) -> None:
    """The fake driver lists `pid` on GPU 0 with `gib` GiB (while the pid lives)."""
    procs_file.write_text(json.dumps({"0": [[pid, gib * GIB]]}))


def events(agent_dir: Path, job_id: str, name: str) -> list[dict]:
    return [r for r in journal(agent_dir, job_id) if r["kind"] == "event" and r["event"] == name]


@pytest.mark.slow  # the job's grace, then inspect: ~4 s
def test_an_escaped_process_holding_a_gpu_after_stop_is_killed_and_reported(
    gpu_client: AgentClient, agent_dir: Path, workdir: Path, procs_file: Path
) -> None:
    job = launch(gpu_client, workdir, ESCAPING, env={"CUDA_VISIBLE_DEVICES": "0"}, grace=1)
    pid = int(
        wait_for(
            lambda: (workdir / "holder.pid").exists() and (workdir / "holder.pid").read_text(), what="holder"
        )
    )
    hold(procs_file, pid)
    gpu_client.request("stop", job=job["id"], node="0")
    final = wait_state(gpu_client, job["id"], {"stopped"}, timeout=20)
    assert not alive(pid)
    [freed] = final["gpus_freed"]
    assert freed["pid"] == pid and freed["gpu"] == 0 and freed["mem_mib"] == 38 * 1024
    assert final["gpus_held"] is None  # killed: nothing is left on the GPU
    shown = gpudeck("inspect", job["id"]).stdout
    assert f"  GPU freed: GPU 0: PID {pid} (" in shown and "38 GiB, killed after the end" in shown
    assert " ! " not in shown
    [said] = events(agent_dir, job["id"], "gpus_freed")
    assert said["data"]["freed"][0]["pid"] == pid


@pytest.mark.slow  # three CLI calls besides the job: ~5 s
def test_a_process_not_the_jobs_on_its_gpu_is_reported_held_and_left_alone(
    gpu_client: AgentClient, agent_dir: Path, workdir: Path, procs_file: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
    other = subprocess.Popen(SLEEP, env=env)  # another user's trainer, as far as the job can tell
    try:
        job = launch(gpu_client, workdir, SLEEP, env={"CUDA_VISIBLE_DEVICES": "0"}, grace=1)
        wait_state(gpu_client, job["id"], {"running"})
        hold(procs_file, other.pid, gib=2)
        gpu_client.request("stop", job=job["id"], node="0")
        final = wait_state(gpu_client, job["id"], {"stopped"}, timeout=20)
        [held] = final["gpus_held"]
        assert held["pid"] == other.pid and held["ours"] is False and held["mem_mib"] == 2048
        assert alive(other.pid)  # never ours to kill
        [said] = events(agent_dir, job["id"], "gpus_held")
        assert held["name"] == Path(sys.executable).name[:15]  # /proc/PID/comm
        text = f"GPU 0 still held by PID {other.pid} ({held['name']}), 2 GiB (not the job's: left alone)"
        assert said["data"]["why"] == text
        # ps and inspect say it, marked `!`: never a silent "stopped"
        ps = gpudeck("ps", "--all")
        row = next(line for line in ps.stdout.splitlines() if line.startswith(job["id"]))
        assert "stopped !" in row and f"GPU 0 still held by PID {other.pid}" in row
        assert f"  ! {text}" in gpudeck("inspect", job["id"]).stdout.splitlines()
        [obj] = [j for j in json.loads(gpudeck("ps", "--all", "--json").stdout) if j["id"] == job["id"]]
        assert obj["gpus_held"][0]["pid"] == other.pid and obj["gpus_held"][0]["host"] == "local"
    finally:
        other.kill()
        other.wait()


def test_a_clean_stop_reports_nothing_held(gpu_client: AgentClient, agent_dir: Path, workdir: Path) -> None:
    job = launch(gpu_client, workdir, SLEEP, env={"CUDA_VISIBLE_DEVICES": "0"}, grace=1)
    wait_state(gpu_client, job["id"], {"running"})
    gpu_client.request("stop", job=job["id"], node="0")
    final = wait_state(gpu_client, job["id"], {"stopped"}, timeout=20)
    assert final["gpus_held"] is None and final["gpus_freed"] is None
    end = [r for r in journal(agent_dir, job["id"]) if r.get("state") == "stopped"][0]
    assert end["gpus_checked"] is True  # checked, and found free
    assert not events(agent_dir, job["id"], "gpus_held")
    row = next(line for line in gpudeck("ps", "--all").stdout.splitlines() if line.startswith(job["id"]))
    assert "!" not in row and "held" not in row


def test_without_nvml_the_end_claims_nothing(client: AgentClient, agent_dir: Path, workdir: Path) -> None:
    job = launch(client, workdir, SLEEP, grace=1)
    wait_state(client, job["id"], {"running"})
    client.request("stop", job=job["id"], node="0")
    wait_state(client, job["id"], {"stopped"}, timeout=20)
    end = [r for r in journal(agent_dir, job["id"]) if r.get("state") == "stopped"][0]
    assert "gpus_checked" not in end and "gpus_held" not in end


HELD = {
    "gpu": 3,
    "uuid": "GPU-x",
    "pid": 4242,
    "name": "python",
    "user": "ann",
    "mem_mib": 38 * 1024,
    "ours": True,
}


def test_the_tuis_job_row_and_view_say_a_held_gpu_in_red() -> None:
    from tui.fleet.jobs import JobModel
    from tui.widgets.jobs_table import _info

    job = JobModel(id="j1")
    node = job.node_for("0", "gpu1")
    job.apply_record("gpu1", node, {"kind": "state", "state": "running", "pid": 7}, 1.0)
    assert job.gpus_held == [] and "held" not in str(_info(job, []))
    end = {"kind": "state", "state": "stopped", "exit_code": None, "signal": None, "gpus_held": [HELD]}
    job.apply_record("gpu1", node, end, 2.0)
    assert job.gpus_held == ["GPU 3 still held by PID 4242 (python), 38 GiB"]
    info = _info(job, [])
    assert str(info) == "! GPU 3 still held by PID 4242 (python), 38 GiB"
    assert any("$error" in str(span.style) for span in info.spans)
    # a snapshot (the agent's job object) carries it too: a TUI opened after the end shows it
    later = JobModel(id="j1")
    later.apply_object(
        {"id": "j1", "node": "0", "state": "stopped", "gpus_held": [dict(HELD, ours=False)]}, "gpu1"
    )
    assert later.gpus_held == ["GPU 3 still held by PID 4242 (python), 38 GiB (not the job's: left alone)"]


@pytest.mark.slow  # a supervisor killed, then the stop: ~5 s
def test_a_job_whose_supervisor_died_still_ends_with_its_gpus_proven_free(
    gpu_client: AgentClient, agent_dir: Path, workdir: Path, procs_file: Path
) -> None:
    job = launch(gpu_client, workdir, ESCAPING, env={"CUDA_VISIBLE_DEVICES": "0"}, grace=1)
    pid = int(
        wait_for(
            lambda: (workdir / "holder.pid").exists() and (workdir / "holder.pid").read_text(), what="holder"
        )
    )
    hold(procs_file, pid)
    supervisor = wait_state(gpu_client, job["id"], {"running"})["supervisor_pid"]
    os.kill(supervisor, signal.SIGKILL)  # the orphan path (or the keeper's adopter) ends it now
    wait_for(lambda: not alive(supervisor), what="the supervisor gone")
    gpu_client.request("stop", job=job["id"], node="0", grace=1, timeout=60)
    final = wait_state(gpu_client, job["id"], {"stopped", "exited"}, timeout=30)
    assert not alive(pid)
    assert [f["pid"] for f in final["gpus_freed"]] == [pid] and final["gpus_held"] is None
