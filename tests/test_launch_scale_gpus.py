"""Issue 33: a launch that asks for GPUs reads the holders of the host's GPUs (the index of
remote_agent/gpus/registry.py), not every job's dir; counted with an audit hook, never timed."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from remote_agent.gpus.assign import GpuShortage, assign
from remote_agent.gpus.registry import INDEX
from remote_agent.probes import gpu
from tests.support.touched import touched, under

FAKES = Path(__file__).parent / "fakes" / "nvml"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """Two GPUs in this process (a fresh fake pynvml, and a fresh NVML session)."""
    spec = importlib.util.spec_from_file_location("pynvml", FAKES / "pynvml.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "pynvml", mod)  # before it runs: its dataclasses look it up
    spec.loader.exec_module(mod)
    mod.GPUS[:] = [mod.FakeGpu(uuid="GPU-aaaa"), mod.FakeGpu(uuid="GPU-bbbb")]
    gpu.reset()
    yield mod
    gpu.reset()


def node_dir(root: Path, job: str) -> Path:
    d = root / "jobs" / job / "0"
    d.mkdir(parents=True)
    (d / "events.jsonl").write_text(
        json.dumps({"seq": 1, "t": 1.0, "kind": "state", "state": "running"}) + "\n"
    )
    return d


def test_a_launch_asking_for_gpus_reads_only_the_holders_of_the_hosts_gpus(
    tmp_path: Path, fake: ModuleType
) -> None:
    holder = node_dir(tmp_path, "20261206-100000-aaaaaa")
    assert assign(tmp_path, holder, {"count": 1}, gpu.default())["uuids"] == ["GPU-aaaa"]
    others = [node_dir(tmp_path, f"20261206-1100{i:02d}-bbbbbb") for i in range(30)]  # no GPUs asked
    new = node_dir(tmp_path, "20261206-120000-cccccc")
    with touched() as seen:
        got = assign(tmp_path, new, {"count": 1}, gpu.default())
    assert got["uuids"] == ["GPU-bbbb"]  # the holder's GPU was seen as held
    assert str(tmp_path / "jobs") not in seen  # the jobs dir was not listed
    assert [p for o in others for p in under(seen, o)] == []
    assert under(seen, holder)  # the holder was checked (still running)
    assert json.loads((tmp_path / INDEX).read_text()) == {
        "GPU-aaaa": ["20261206-100000-aaaaaa", "0"],
        "GPU-bbbb": ["20261206-120000-cccccc", "0"],
    }


def test_without_an_index_the_holders_are_found_in_every_job_dir(tmp_path: Path, fake: ModuleType) -> None:
    """GPUs an older agent assigned (no index yet) are still held: the first launch looks everywhere."""
    old = node_dir(tmp_path, "20261206-100000-aaaaaa")
    (old / "gpus.json").write_text(json.dumps({"indices": [0, 1], "uuids": ["GPU-aaaa", "GPU-bbbb"]}))
    with pytest.raises(GpuShortage) as refused:
        assign(tmp_path, node_dir(tmp_path, "20261206-120000-cccccc"), {"count": 1}, gpu.default())
    assert "job 20261206-100000-aaaaaa node 0" in str(refused.value)
