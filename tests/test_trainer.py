"""The reference trainer, driven as gpudeck drives it: `python -m trainer` in a real subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

# Slow as a whole: runs the trainer (torch) in subprocesses: seconds each.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

from trainer import checkpoint as ckpt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
METRIC_KEYS = {"step", "total_steps", "epoch", "loss", "lr", "samples_per_sec"}


class Trainer:
    """A `python -m trainer` process in its own process group, its stdout parsed line by line."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            self.command(args),
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        # stderr is drained too: a full pipe would block the trainer mid-step.
        self.err_reader = threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True)
        self.err_reader.start()

    def command(self, args: tuple[str, ...]) -> list[str]:
        return [sys.executable, "-m", "trainer", *args]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))  # a non-JSON line fails here and shows in the test
        self.lines.put(None)

    def wait_for(self, pred, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            obj = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if obj is None:
                raise AssertionError(f"trainer ended before the condition; stderr:\n{self.stderr()}")
            self.seen.append(obj)
            if pred(obj):
                return obj

    def finish(self, timeout: float = 60.0) -> tuple[int, list[dict[str, Any]]]:
        rc = self.proc.wait(timeout)
        while (obj := self.lines.get(timeout=5)) is not None:
            self.seen.append(obj)
        return rc, self.seen

    def stderr(self) -> str:
        if self.proc.poll() is not None:
            self.err_reader.join(5)
        return "".join(self.err)

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()


def run_to_end(*args: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    t = Trainer(*args)
    try:
        rc, lines = t.finish(timeout)
        assert rc == 0, t.stderr()
        return lines
    finally:
        t.kill()


def metrics(lines: list[dict[str, Any]]) -> dict[int, float]:
    return {o["step"]: o["loss"] for o in lines if "event" not in o and "loss" in o}


def events(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [o for o in lines if o.get("event") == name]


def assert_plain(value: Any) -> None:
    """A checkpoint holds only tensors and plain values."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str | int)
            assert_plain(v)
    elif isinstance(value, list | tuple):
        for v in value:
            assert_plain(v)
    else:
        assert value is None or isinstance(value, torch.Tensor | int | float | str | bool), type(value)


@pytest.mark.timeout(60)
def test_loss_falls_and_every_line_is_json(tmp_path: Path) -> None:
    lines = run_to_end("--steps", "60", "--workers", "0", "--checkpoint-dir", str(tmp_path), "--seed", "3")
    rows = [o for o in lines if "event" not in o]
    assert [r["step"] for r in rows] == list(range(1, 61))
    for r in rows:
        assert r.keys() >= METRIC_KEYS
        assert r["total_steps"] == 60 and r["epoch"] == 0 and r["world_size"] == 1
        assert r["samples_per_sec"] > 0 and 0 < r["lr"] <= 0.1
    losses = [r["loss"] for r in rows]
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.5 * first, (first, last)
    # Warm-up then cosine decay: the peak is reached early, the end is near zero.
    assert max(r["lr"] for r in rows) == pytest.approx(0.1, rel=0.01) and rows[-1]["lr"] < 0.001

    saved = events(lines, "checkpoint_saved")
    assert [e["step"] for e in saved] == [60] and Path(saved[0]["path"]) == tmp_path / "ckpt-00000060.pt"
    done = events(lines, "done")
    assert done and done[0]["step"] == 60 and done[0]["stopped"] is False
    state = torch.load(saved[0]["path"], weights_only=True)
    assert_plain(state)
    assert state["step"] == 60 and state["samples_seen"] == 60 * 32 and state["world_size"] == 1


@pytest.mark.timeout(90)
def test_sigterm_with_dataloader_workers_checkpoints_exits_0_and_resumes(tmp_path: Path) -> None:
    t = Trainer("--steps", "100000", "--workers", "2", "--checkpoint-dir", str(tmp_path), "--run-id", "r1")
    try:
        t.wait_for(lambda o: o.get("step", 0) >= 5)
        workers = subprocess.run(
            ["pgrep", "-P", str(t.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert len(workers) == 2, workers  # the DataLoader workers are alive when the signal comes
        # The whole group, as a terminal's Ctrl-C or a group-wide stop would: workers get it too.
        os.killpg(t.proc.pid, signal.SIGTERM)
        rc, lines = t.finish(30)
        assert rc == 0, t.stderr()
    finally:
        t.kill()
    last_step = max(metrics(lines))
    assert events(lines, "sigterm")[0]["step"] == last_step
    saved = events(lines, "checkpoint_saved")
    assert [e["step"] for e in saved] == [last_step]
    path = tmp_path / f"ckpt-{last_step:08d}.pt"
    assert Path(saved[0]["path"]) == path and path.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
    state = torch.load(path, weights_only=True)
    assert state["step"] == last_step and state["samples_seen"] == last_step * 32

    again = run_to_end(
        "--steps", str(last_step + 3), "--workers", "0", "--checkpoint-dir", str(tmp_path), "--run-id", "r1"
    )  # fmt: skip
    resumed = again[0]
    assert resumed["event"] == "resumed" and resumed["step"] == last_step
    assert (resumed["samples_seen"], resumed["world_size"], resumed["micro_batch"]) == (last_step * 32, 1, 32)
    assert sorted(metrics(again)) == [last_step + 1, last_step + 2, last_step + 3]


@pytest.mark.timeout(90)
def test_resume_after_sigterm_is_bit_exact(tmp_path: Path) -> None:
    """On CPU with a fixed thread count the resumed run matches an uninterrupted one exactly."""
    common = ["--steps", "30", "--workers", "0", "--seed", "5", "--batch-size", "16", "--run-id", "exact"]
    whole = metrics(run_to_end(*common, "--checkpoint-dir", str(tmp_path / "whole")))

    part = tmp_path / "part"
    t = Trainer(*common, "--checkpoint-dir", str(part))
    try:
        t.wait_for(lambda o: o.get("step", 0) >= 8)
        t.proc.send_signal(signal.SIGTERM)  # the main process only, as gpudeck's stop does
        rc, first = t.finish(30)
        assert rc == 0, t.stderr()
    finally:
        t.kill()
    stopped_at = events(first, "sigterm")[0]["step"]
    assert stopped_at < 30
    rest = run_to_end(*common, "--checkpoint-dir", str(part))
    assert rest[0]["event"] == "resumed" and rest[0]["step"] == stopped_at
    resumed = {**metrics(first), **metrics(rest)}
    assert sorted(resumed) == list(range(1, 31))
    assert resumed == whole  # exact float equality, step by step


def test_newest_valid_checkpoint_skips_a_torn_file(tmp_path: Path) -> None:
    good = {"step": 4, "model": {"w": torch.ones(2)}, "optimizer": {"state": {}, "param_groups": []}}
    ckpt.save_atomic(good, ckpt.path_for(str(tmp_path), 4))
    Path(ckpt.path_for(str(tmp_path), 9)).write_bytes(b"PK\x03\x04 torn by a crash")
    found = ckpt.newest_valid(str(tmp_path))
    assert found is not None and found[0] == 4 and torch.equal(found[1]["model"]["w"], torch.ones(2))
    assert ckpt.list_steps(str(tmp_path)) == [9, 4]
