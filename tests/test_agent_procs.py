"""The `procs` op: a job's process tree with CPU % and RSS from /proc (a real agent, real processes),
merged with NVML's per-process GPU memory (NVML faked at its import boundary, the only fake)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from remote_agent.probes import gpu
from remote_agent.serving.procview import ProcsError, answer, gpu_pids
from tests.support.jobs import launch, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError

FAKE_PATH = Path(__file__).parent / "fakes" / "nvml" / "pynvml.py"
MIB = 1024 * 1024
UUID0 = "GPU-1a2b3c4d-0000-1111-2222-333344445555"
# The command starts a child that holds 64 MiB and spins: a tree of three with a known RSS and CPU.
TREE = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'b = bytearray(64 << 20)\\nwhile True: b[0] = 1']).wait()"
)


@pytest.mark.slow
def test_a_jobs_tree_with_cpu_rss_and_roles(client: AgentClient, workdir: Path) -> None:
    job = launch(client, workdir, [sys.executable, "-c", TREE], name="tree")
    running = wait_state(client, job["id"], {"running"})

    def busy_child() -> dict | None:
        rows = client.request("procs", job=job["id"], node="0", interval=0.3)["processes"]
        child = [r for r in rows if r["role"] == "child" and "bytearray" in r["command"]]
        return (rows, child[0]) if child and (child[0]["cpu_percent"] or 0) > 0 else None

    rows, child = wait_for(busy_child, what="the spinning child, measured")
    roles = {r["pid"]: r["role"] for r in rows}
    assert roles[running["pid"]] == "command" and roles[running["supervisor_pid"]] == "supervisor"
    assert child["ppid"] == running["pid"] and child["rss_bytes"] >= 64 * MIB
    assert child["gpus"] == [] and child["threads"] >= 1
    assert set(child) == {"pid", "ppid", "command", "cpu_percent", "rss_bytes", "threads", "role", "gpus"}

    client.request("kill", job=job["id"], node="0")
    assert client.request("procs", job=job["id"], node="0")["processes"] == []  # over: nothing live


def test_bad_arguments_answer_one_line(client: AgentClient, workdir: Path) -> None:
    with pytest.raises(AgentError, match=r"interval: expected seconds in \(0, 2\], got 5"):
        client.request("procs", job="nope", interval=5)
    with pytest.raises(AgentError, match="job: not a job id"):
        client.request("procs", job="nope")
    with pytest.raises(AgentError, match="gpu: expected a GPU index"):
        client.request("procs", gpu="0")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_PATH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "pynvml", mod)  # before it runs: its dataclasses look it up
    spec.loader.exec_module(mod)
    mod.GPUS[:] = [
        mod.FakeGpu(uuid=UUID0, compute=[(os.getpid(), 39000 * MIB)], graphics=[(os.getpid(), 100 * MIB)]),
        mod.FakeGpu(uuid="GPU-idle"),
    ]
    gpu.reset()
    yield mod
    gpu.reset()


def test_nvml_gpu_memory_is_merged_per_process(fake: ModuleType) -> None:
    nvml = gpu.Nvml()
    me = os.getpid()
    result = answer({me: "command"}, nvml, 0.01)
    assert result["gpu_available"] is True
    [row] = result["processes"]
    assert row["pid"] == me and row["role"] == "command" and row["rss_bytes"] > 0
    assert row["gpus"] == [{"index": 0, "uuid": UUID0, "mem_mib": 39000}]
    assert gpu_pids(nvml, 0) == {me: "gpu"} and gpu_pids(nvml, 1) == {}
    with pytest.raises(ProcsError, match="gpu 7: no such GPU"):
        gpu_pids(nvml, 7)


def test_the_client_reads_any_answer_shape_without_raising() -> None:
    from tui.actions.procs import rows_of

    assert (
        rows_of("h", "0", None) == []
        and rows_of("h", "0", ["x"]) == []
        and rows_of("h", "0", {"processes": 7}) == []
    )
    weird = {
        "processes": [
            None,
            {"pid": True},
            {"pid": "9"},
            {"pid": 5, "gpus": "no", "cpu_percent": "hot", "command": "x" * 5000},
            {"pid": 6, "gpus": [{"index": 1, "mem_mib": 10}, 3], "rss_bytes": 4096, "role": "command"},
        ]
    }
    five, six = rows_of("h", "0", weird)
    assert (five.pid, five.cpu_percent, five.gpus, len(five.command)) == (5, None, (), 400)
    assert (six.pid, six.role, six.gpus, six.rss_bytes) == (6, "command", ((1, 10),), 4096)
