"""Issue 31, GPU requests: `--gpus N[:MODEL]` gets a node N specific free GPUs of its host, chosen
atomically by the host's agent (two runs at once never share one; GPUs held by other gpudeck jobs or
used by foreign processes are not free), given through CUDA_VISIBLE_DEVICES, journaled by UUID and
freed by the job's end. The GPUs are fake (NVML is the one thing faked); everything else is real."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from remote_agent.gpus.assign import GpuShortage, assign, held
from remote_agent.gpus.record import read_assignment
from remote_agent.probes import gpu
from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.waiting import wait_for

FAKES = Path(__file__).parent / "fakes" / "nvml"
A100 = "NVIDIA A100-SXM4-80GB"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Two A100s in this process (a fresh fake pynvml, and a fresh NVML session)."""
    spec = importlib.util.spec_from_file_location("pynvml", FAKES / "pynvml.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "pynvml", mod)  # before it runs: its dataclasses look it up
    spec.loader.exec_module(mod)
    mod.GPUS[:] = [mod.FakeGpu(uuid="GPU-aaaa", name=A100), mod.FakeGpu(uuid="GPU-bbbb", name=A100)]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    gpu.reset()
    yield mod
    gpu.reset()


def node_dir(root: Path, job: str, node: str = "0") -> Path:
    d = root / "jobs" / job / node
    d.mkdir(parents=True)
    return d


def ended(d: Path) -> None:
    (d / "events.jsonl").write_text(
        json.dumps({"seq": 1, "t": 1.0, "kind": "state", "state": "exited"}) + "\n"
    )


def test_each_request_gets_its_own_gpus_until_none_is_free(tmp_path: Path, fake: ModuleType) -> None:
    nvml = gpu.default()
    a = node_dir(tmp_path, "20261205-100000-aaaaaa")
    b = node_dir(tmp_path, "20261205-100000-bbbbbb")
    assert assign(tmp_path, a, {"count": 1}, nvml)["uuids"] == ["GPU-aaaa"]
    assert assign(tmp_path, b, {"count": 1}, nvml)["indices"] == [1]
    with pytest.raises(GpuShortage) as refused:
        assign(tmp_path, node_dir(tmp_path, "20261205-100000-cccccc"), {"count": 1}, nvml)
    said = str(refused.value)
    assert "\n" not in said and "0 free" in said
    assert "GPU 0: job 20261205-100000-aaaaaa node 0" in said and "GPU 1: job 20261205-100000-bbbbbb" in said
    ended(a)  # the first job's end frees its GPU, whatever the end
    assert held(tmp_path) == {"GPU-bbbb": "job 20261205-100000-bbbbbb node 0"}
    assert assign(tmp_path, node_dir(tmp_path, "20261205-100000-dddddd"), {"count": 1}, nvml)["indices"] == [
        0
    ]


def test_a_gpu_a_foreign_process_uses_is_not_free(tmp_path: Path, fake: ModuleType) -> None:
    fake.GPUS[0].compute = [(os.getpid(), 1 << 30)]  # someone's notebook on GPU 0
    got = assign(tmp_path, node_dir(tmp_path, "20261205-100000-aaaaaa"), {"count": 1}, gpu.default())
    assert got["indices"] == [1]
    with pytest.raises(GpuShortage, match=r"GPU 0: pid \d+ \(") as refused:
        assign(tmp_path, node_dir(tmp_path, "20261205-100000-bbbbbb"), {"count": 1}, gpu.default())
    assert "2 GPUs" not in str(refused.value)


def test_a_model_is_matched_within_the_gpus_name(tmp_path: Path, fake: ModuleType) -> None:
    got = assign(
        tmp_path, node_dir(tmp_path, "20261205-100000-aaaaaa"), {"count": 2, "model": "a100"}, gpu.default()
    )
    assert got["indices"] == [0, 1] and got["names"] == [A100, A100]
    with pytest.raises(GpuShortage, match=f"no H100 GPU on this host \\(it has {A100}\\)"):
        assign(
            tmp_path,
            node_dir(tmp_path, "20261205-100000-bbbbbb"),
            {"count": 1, "model": "H100"},
            gpu.default(),
        )


def test_a_host_without_gpus_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` fails: no NVIDIA stack
    gpu.reset()
    try:
        with pytest.raises(GpuShortage, match="1 GPU asked, but no NVIDIA GPU"):
            assign(tmp_path, node_dir(tmp_path, "20261205-100000-aaaaaa"), {"count": 1}, gpu.default())
    finally:
        gpu.reset()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--gpus", "0"], "--gpus '0': expected N or N:MODEL"),
        (["--gpus", "two"], "--gpus 'two': expected N or N:MODEL"),
        (["--gpus", "65"], "--gpus '65'"),
        (
            ["--gpus", "1", "--env", "CUDA_VISIBLE_DEVICES=0"],
            "--gpus and --env CUDA_VISIBLE_DEVICES: choose one",
        ),
    ],
)
def test_bad_requests_are_one_usage_line(
    gpudeck_home: Path, workdir: Path, flags: list[str], said: str
) -> None:
    r = gpudeck("run", *flags, "--", "true", cwd=workdir)
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.fixture
def two_gpu_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local agent (a subprocess) sees two A100s."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKES), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([{"uuid": "GPU-aaaa"}, {"uuid": "GPU-bbbb"}]))


PRINT_GPUS = 'echo "visible=$CUDA_VISIBLE_DEVICES order=$CUDA_DEVICE_ORDER"; exec sleep 300'


@pytest.mark.slow  # four real jobs
def test_runs_get_distinct_gpus_journaled_by_uuid_and_freed_at_their_end(
    gpudeck_home: Path, agent_dir: Path, workdir: Path, two_gpu_host: None
) -> None:
    first = gpudeck("run", "--gpus", "1", "--", "sh", "-c", PRINT_GPUS, cwd=workdir).stdout.strip()
    second = gpudeck("run", "--gpus", "1:A100", "--", "sh", "-c", PRINT_GPUS, cwd=workdir).stdout.strip()
    try:
        for job, index in ((first, "0"), (second, "1")):
            wait_for(
                lambda job=job, index=index: (
                    f"visible={index} order=PCI_BUS_ID" in gpudeck("logs", job, cwd=workdir).stdout
                ),
                what=f"{job}'s GPU",
            )
        [event] = [r for r in journal(agent_dir, first) if r.get("event") == "gpus_assigned"]
        assert event["data"]["uuids"] == ["GPU-aaaa"] and event["data"]["indices"] == [0]
        shown = json.loads(gpudeck("inspect", "--json", second, cwd=workdir).stdout)
        assert shown["gpus"] == {"count": 1, "model": "A100"} and shown["nodes"][0]["gpus"]["uuids"] == [
            "GPU-bbbb"
        ]
        assert "gpus 1 (NVIDIA A100-SXM4-80GB)" in gpudeck("inspect", second, cwd=workdir).stdout

        third = gpudeck("run", "--gpus", "1", "--", "true", cwd=workdir)  # both GPUs are taken
        assert third.returncode != 0 and "0 free on this host" in third.stderr, third.stderr
        assert len(third.stderr.strip().splitlines()) == 1 and first in third.stderr
        assert not any(
            j["name"] == "true" for j in json.loads(gpudeck("ps", "--all", "--json", cwd=workdir).stdout)
        )

        assert gpudeck("kill", first, cwd=workdir).returncode == 0  # an end frees its GPU
        fourth = gpudeck("run", "--gpus", "1", "--", "sh", "-c", PRINT_GPUS, cwd=workdir).stdout.strip()
        wait_for(lambda: "visible=0 " in gpudeck("logs", fourth, cwd=workdir).stdout, what="GPU 0 again")
        gpudeck("kill", fourth, cwd=workdir)
    finally:
        gpudeck("kill", second, cwd=workdir)


@pytest.mark.slow
def test_two_runs_at_once_never_share_a_gpu(
    gpudeck_home: Path, agent_dir: Path, workdir: Path, two_gpu_host: None
) -> None:
    both = [
        subprocess.Popen(
            [sys.executable, "-m", "tui", "run", "--gpus", "2", "--", "sleep", "300"],
            cwd=workdir,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in both]  # type: ignore[union-attr]
    won = [r for r in results if r[0] == 0]
    lost = [r for r in results if r[0] != 0]
    try:
        assert len(won) == 1 and len(lost) == 1, results
        assert "0 free on this host" in lost[0][2], lost[0][2]
        job = won[0][1].strip()
        assert read_assignment(agent_dir / "jobs" / job / "0") == {
            "indices": [0, 1],
            "uuids": ["GPU-aaaa", "GPU-bbbb"],
            "names": [A100, A100],
        }
    finally:
        for _, out, _ in won:
            gpudeck("kill", out.strip(), cwd=workdir)


@pytest.mark.slow
def test_a_restart_gets_gpus_again(gpudeck_home: Path, workdir: Path, two_gpu_host: None) -> None:
    job = gpudeck("run", "--gpus", "2", "--", "sh", "-c", PRINT_GPUS, cwd=workdir).stdout.strip()
    wait_for(lambda: "visible=0,1 " in gpudeck("logs", job, cwd=workdir).stdout, what="both GPUs")
    assert gpudeck("stop", job, "--grace", "1", cwd=workdir).returncode == 0
    again = gpudeck("restart", job, cwd=workdir)
    assert again.returncode == 0, again.stderr
    new = again.stdout.strip()
    try:
        wait_for(
            lambda: "visible=0,1 " in gpudeck("logs", new, cwd=workdir).stdout, what="the restart's GPUs"
        )
    finally:
        gpudeck("kill", new, cwd=workdir)


def test_the_forms_gpus_field_is_read_as_the_flag_is() -> None:
    from remote_agent.spec import GpuRequest
    from tui.actions.options import form_options
    from tui.errors import GpudeckError

    assert form_options("local", "python train.py", gpus=" 2:A100 ").gpus == GpuRequest(2, "A100")
    assert form_options("local", "python train.py").gpus is None  # empty: every GPU, as before
    with pytest.raises(GpudeckError, match="gpus '0': expected N or N:MODEL"):
        form_options("local", "python train.py", gpus="0")


def test_placement_counts_a_gpu_given_to_a_job_as_taken() -> None:
    from tui.actions.placement import free_in

    sample = {
        "gpus": [
            {"uuid": "GPU-aaaa", "processes": [], "held_by": "job 20261205-100000-aaaaaa node 0"},
            {"uuid": "GPU-bbbb", "processes": [], "held_by": None},
        ]
    }
    assert free_in(sample) == 1  # before: 2 (a job given GPU 0 that has not started its process yet)
