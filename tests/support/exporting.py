"""What the exporter tests share: a fake GPU on the local host, a job with a point, and a running
`gpudeck export prometheus`. A test module imports `fake_gpu_fixture, exporter_fixture`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for

FAKE_NVML = Path(__file__).resolve().parents[1] / "fakes" / "nvml"
GPU = {"uuid": "GPU-aaaa-1111", "name": "NVIDIA A10G", "util": 63}


@pytest.fixture(name="fake_gpu")
def fake_gpu_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local host gets one fake NVML GPU (the agent is a child: PYTHONPATH + $PYNVML_FAKE)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_NVML), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([GPU]))


def ps_all(workdir: Path) -> list[dict[str, object]]:
    out = gpudeck("ps", "--all", "--json", cwd=workdir)
    assert out.returncode == 0, out.stderr
    return [j for j in json.loads(out.stdout) if j.get("state") != "queued"]


def start_job(workdir: Path, script: str, *opts: str) -> str:
    """`gpudeck run` of a bash script; returns once the job has its first point."""
    out = gpudeck("run", *opts, "--", "bash", "-c", script, cwd=workdir)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    wait_for(
        lambda: any(j["id"] == job_id and j["last"] for j in ps_all(workdir)), timeout=60, what="its point"
    )
    return job_id


@pytest.fixture(name="exporter")
def exporter_fixture(gpudeck_home: Path, workdir: Path, fake_gpu: None) -> Iterator[str]:
    """`gpudeck export prometheus` on a free port; yields its /metrics URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "export", "prometheus", "--listen", "127.0.0.1:0"],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line + (
            proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
        )
        yield line.split()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
