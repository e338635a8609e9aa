"""`metrics` tails journals as text (`journal` pushes): a replay serves them so, and a recording of
them replays the same points."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from remote_agent.storage.journal import JournalWriter
from tests.conftest import gpudeck
from tui.remote.replay import Recording

SESSION = Path(__file__).parent / "data" / "recordings" / "session.jsonl"


def _expected(recording: Recording, host: str, job_id: str) -> list[str]:
    tape = recording.tapes[host]
    points, seen = [], 0
    for key, batches in tape.pushes.items():
        if key[0] != job_id:
            continue
        for _, records in sorted(batches, key=lambda b: b[0]):
            for r in records:
                if r["seq"] > seen and r.get("kind") == "metric":
                    points.append(json.dumps({"t": r["t"], "node": key[1], "values": r["values"]}))
                seen = max(seen, r["seq"])
    return points


@pytest.mark.slow  # two CLI runs
def test_metrics_replays_from_the_shipped_recording() -> None:
    ps = gpudeck("--replay", str(SESSION), "--replay-speed", "0", "ps", "--all", "--json")
    job = next(j for j in json.loads(ps.stdout) if j["name"] == "resnet-demo")
    done = gpudeck(
        "--replay", str(SESSION), "--replay-speed", "0", "metrics", "--json", "resnet-demo", timeout=60
    )
    assert done.returncode == 0, done.stderr
    expected = _expected(Recording.load(SESSION), job["nodes"][0]["host"], job["id"])
    assert expected and done.stdout.splitlines() == expected


@pytest.mark.slow  # three CLI runs
def test_a_recorded_text_tail_replays_the_same_points(gpudeck_home: Path, tmp_path: Path) -> None:
    job_id = "20260101-000000-abcdef"
    directory = gpudeck_home / "local-agent" / "jobs" / job_id / "0"
    directory.mkdir(parents=True)
    spec = {"id": job_id, "name": "taped", "node": "0", "argv": ["true"], "workdir": str(tmp_path), "env": {},
            "setup": [], "grace": 60.0, "created_at": time.time(), "stop_signal": "SIGTERM"}  # fmt: skip
    (directory / "spec.json").write_text(json.dumps(spec))
    (directory / "lock").touch()
    journal = JournalWriter(directory / "events.jsonl")
    journal.append("state", state="starting", supervisor_pid=1)
    journal.append_many(
        [("metric", {"values": {"step": i, "loss": 1 / i, "note": "ü"}}) for i in range(1, 40)]
    )
    journal.append("state", state="exited", exit_code=0, signal=None)
    journal.close()
    tape = tmp_path / "tape.jsonl"
    live = gpudeck("--record", str(tape), "metrics", "--json", "taped", cwd=tmp_path)
    assert live.returncode == 0, live.stderr
    assert len(live.stdout.splitlines()) == 39
    replayed = gpudeck(
        "--replay", str(tape), "--replay-speed", "0", "metrics", "--json", "taped", cwd=tmp_path, timeout=60
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == live.stdout
