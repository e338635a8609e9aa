"""docs/gpu_fleet.py writes a recording the replay transport plays as the fleet the README shows:
3 hosts × 8 H100, a two-node job and a one-node job, one idle GPU, each node's process tree, and the
file in docs/ is the one the script makes (regenerate it with the script after a change)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tui.remote.replay import Recording

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "gpu_fleet.py"


def test_the_recording_is_the_fleet_the_readme_promises(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("gpu_fleet", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    path = tmp_path / "fleet.jsonl"
    script.make_recording(path)
    assert path.read_bytes() == script.RECORDING.read_bytes()  # the committed file is up to date

    rec = Recording.load(path)
    assert rec.hosts == ["h100-a", "h100-b", "h100-spot"]
    for host, tape in rec.tapes.items():
        assert (
            tape.hello is not None
            and [g["name"] for g in tape.hello["gpu"]["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 8
        )
        [(_, last_gpus)] = tape.answers["gpus"][-1:]
        idle = [g["index"] for g in last_gpus["result"]["gpus"] if not g["processes"]]
        assert idle == ([7] if host == "h100-spot" else [])
        procs = tape.answers["procs"][0][1]["result"]["processes"]
        assert {"supervisor", "command", "child"} <= {p["role"] for p in procs}
    jobs = {
        j["id"]: j["name"]
        for tape in rec.tapes.values()
        for j in tape.answers["jobs"][-1][1]["result"]["jobs"]
    }
    assert sorted(jobs.values()) == ["llama3-8b-sft", "vit-h14-pretrain"]
    assert sorted(k for k in rec.tapes["h100-b"].pushes) == [
        (next(i for i, n in jobs.items() if n == "llama3-8b-sft"), "1")
    ]
