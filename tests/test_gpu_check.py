"""bench/gpu_check.py where there is no GPU: it says so and exits 0; its summary, time limits and agent
part, checked here so that a lent GPU's few minutes are not spent on the check's own bugs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.gpucheck import detect, runner
from bench.gpucheck.context import Context
from bench.gpucheck.part_agent import watch_jobs
from bench.gpucheck.parts import NAMES, Part
from bench.gpucheck.result import FAIL, OK, SKIP, PartResult, exit_code, report, table, write_json
from tests.support.cleanup import kill_all_jobs

ROOT = Path(__file__).resolve().parents[1]
FAKE_NVML = ROOT / "tests" / "fakes" / "nvml"
UUID = "GPU-11111111-2222-3333-4444-555555555555"


def context(tmp_path: Path) -> Context:
    return Context(quick=True, tmp=tmp_path, facts={}, options={})


def test_without_a_gpu_it_says_so_and_exits_0(tmp_path: Path) -> None:
    if detect.no_gpu_reason(detect.machine()) is None:
        pytest.skip("this machine has a GPU: the check would run for minutes")
    env = {k: v for k, v in os.environ.items() if k != "PYNVML_FAKE"}
    out = tmp_path / "out" / "gpu_check.json"
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert "no GPU" in p.stderr and "no GPU" in p.stdout
    summary = json.loads(out.read_text())
    assert summary["ok"] is True
    parts = {r["part"]: r for r in summary["parts"]}
    assert list(parts) == ["gpu", *NAMES]
    assert parts["gpu"]["status"] == SKIP and parts["gpu"]["reason"].startswith("no GPU: NVML: ")
    assert all(r["status"] == SKIP and r["reason"] == "no GPU" for r in summary["parts"][1:])
    assert p.stdout.splitlines()[2].split()[:2] == ["gpu", "skip"]  # the table: header, rule, rows


def test_the_summary_table_and_json(tmp_path: Path) -> None:
    results = [
        PartResult("gpu", OK, "1 × NVIDIA H100 80GB HBM3", "", 0.1),
        PartResult("trainer_resnet50", OK, "2,900 img/s = 1.17 × A100 (2,470)", "GPU util mean 97 %", 41.25),
        PartResult("container", SKIP, "", "neither docker nor podman is installed"),
        PartResult("oom_backoff", FAIL, "", "exit 1: " + "x" * 300, 12.0, {"backoffs": [256]}),
    ]
    lines = table(results).splitlines()
    assert lines[0].split() == ["part", "result", "number", "seconds", "reason"]
    assert set(lines[1]) == {"-", " "}
    # Every column starts where its header does; the reason is never cut.
    starts = [lines[0].index(h) for h in ("result", "number", "seconds", "reason")]
    row = lines[3]
    assert row.startswith("trainer_resnet50  ok")
    assert [row[s - 2 : s] for s in starts] == ["  "] * 4
    assert row[starts[1] :].startswith("2,900 img/s") and row[starts[2] :].startswith("41.2")
    assert lines[5].endswith("x" * 300) and lines[4].endswith("neither docker nor podman is installed")
    assert exit_code(results) == 1 and exit_code(results[:3]) == 0

    path = tmp_path / "deep" / "s.json"
    write_json(str(path), report(results, quick=True))
    back = json.loads(path.read_text())
    assert back["ok"] is False and back["quick"] is True
    assert back["parts"][3] == {
        "part": "oom_backoff",
        "status": FAIL,
        "number": "",
        "reason": "exit 1: " + "x" * 300,
        "seconds": 12.0,
        "details": {"backoffs": [256]},
    }


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_a_part_that_hangs_fails_at_its_limit_and_its_children_die(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "MIN_SECONDS", 0.1)
    monkeypatch.setattr(runner, "GRACE", 0.2)
    ctx = context(tmp_path)
    children = []

    def hang(c: Context) -> PartResult:
        children.append(c.spawn(["sleep", "60"]))
        time.sleep(60)  # a wait without a timeout, as a wedged CUDA call would be
        raise AssertionError("not reached")

    result = runner.run_part(Part("stuck", hang, False, 1, 1), ctx, time.monotonic() + 60)
    assert (result.part, result.status, result.reason) == ("stuck", FAIL, "timed out after 1 s")
    assert children[0].proc.poll() is not None  # killed, not left behind


def test_a_part_that_raises_fails_and_a_cuda_part_skips_without_cuda(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    def broken(c: Context) -> PartResult:
        raise KeyError("gpus")

    end = time.monotonic() + 60
    assert runner.run_part(Part("b", broken, False, 10, 10), ctx, end).reason == "KeyError: 'gpus'"
    ctx.facts["torch"] = {"cuda": False, "reason": "torch not importable (ModuleNotFoundError: torch)"}
    needs = runner.run_part(Part("c", broken, True, 10, 10), ctx, end)
    assert (needs.status, needs.reason) == (
        SKIP,
        "needs torch with CUDA: torch not importable (ModuleNotFoundError: torch)",
    )
    assert runner.run_part(Part("d", broken, False, 10, 10), ctx, time.monotonic() + 1).reason.startswith(
        "no time left"
    )


def test_the_agent_part_finds_gpu_samples_in_a_jobs_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpudeck_home: Path
) -> None:
    """NVML faked at its import boundary, in the agent and its supervisors; the rest is real."""
    gpu = {"uuid": UUID, "name": "NVIDIA H100 80GB HBM3", "util": 88, "mem_used": 5000 * 2**20}
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([gpu]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_NVML), str(ROOT)]))
    ctx = context(tmp_path)
    ctx.deadline = time.monotonic() + 40
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    try:
        found = watch_jobs(ctx, sleeper, {"by CUDA_VISIBLE_DEVICES": {"CUDA_VISIBLE_DEVICES": "0"}})
    finally:
        kill_all_jobs(tmp_path / "gpudeck-home" / "local-agent")
    got = found["by CUDA_VISIBLE_DEVICES"]
    assert got["records"] >= 1, got
    assert got["first"] == [
        {
            "uuid": UUID,
            "index": 0,
            "util": 88,
            "mem_used_mib": 5000,
            "mem_total_mib": 81920,
            "temp_c": 35,
            "power_w": 60.0,
        }
    ]
