"""The trainer under a real `torchrun` (gloo on CPU): resize by checkpoint, and stop with SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

# Slow as a whole: torchrun with several workers: seconds each.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

from test_trainer import ROOT, Trainer, events, run_to_end  # noqa: E402

from tests.support.sshd import free_port  # noqa: E402


def torchrun(tmp: Path, *args: str, launcher: str = "torch.distributed.run") -> list[str]:
    return [
        "-m", launcher, "--nnodes=1", "--nproc-per-node=2", "--master-addr=127.0.0.1",
        f"--master-port={free_port()}", "--log-dir", str(tmp / "torchrun-logs"), "-m", "trainer", *args,
    ]  # fmt: skip


def descendants(pid: int) -> list[int]:
    """Every process below `pid`; torchrun's workers sit in their own sessions, so killpg misses them."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                kids = [int(c) for c in (task / "children").read_text().split()]
                out += kids
                todo += kids
    return out


class TorchrunTrainer(Trainer):
    def __init__(self, tmp: Path, *args: str, launcher: str = "torch.distributed.run") -> None:
        self.argv = torchrun(tmp, *args, launcher=launcher)
        super().__init__(*args)

    def command(self, args: tuple[str, ...]) -> list[str]:
        return [sys.executable, *self.argv]

    def kill(self) -> None:
        for pid in [*descendants(self.proc.pid), self.proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        super().kill()


def run_torchrun(tmp: Path, *args: str) -> list[dict]:
    t = TorchrunTrainer(tmp, *args)
    try:
        rc, lines = t.finish(90)
        assert rc == 0, t.stderr()
        return lines
    finally:
        t.kill()


@pytest.mark.timeout(120)
def test_resize_1_to_2_to_1_keeps_global_batch_and_sees_each_sample_once_per_epoch(tmp_path: Path) -> None:
    ck, log = str(tmp_path / "ck"), str(tmp_path / "samples")
    # 64 samples, global batch 16: 4 steps per epoch; 18 steps = 4 whole epochs and half of a fifth.
    common = ["--synthetic-size", "64", "--batch-size", "16", "--workers", "0", "--checkpoint-dir", ck]
    common += ["--sample-log", log, "--run-id", "resize"]  # one run, resized: each part resumes it
    one = run_to_end(*common, "--steps", "6")
    two = run_torchrun(tmp_path, *common, "--steps", "12", "--micro-batch", "4")
    three = run_to_end(*common, "--steps", "18")

    ws = {o["step"]: o["world_size"] for run in (one, two, three) for o in run if "loss" in o}
    assert ws == {s: 1 if s <= 6 or s > 12 else 2 for s in range(1, 19)}
    assert [e["step"] for e in events(two, "resumed")] == [6]
    changed = events(two, "world_size_changed")
    assert changed and changed[0]["previous"] == 1 and changed[0]["world_size"] == 2
    # Global batch kept: 2 ranks x micro-batch 4 x 2 accumulation steps = 16.
    assert (changed[0]["global_batch"], changed[0]["micro_batch"], changed[0]["accumulation"]) == (16, 4, 2)
    assert events(three, "resumed")[0]["samples_seen"] == 12 * 16
    assert events(three, "world_size_changed")[0]["previous"] == 2

    rows = [
        tuple(map(int, line.split()))
        for p in tmp_path.glob("samples.rank*")
        for line in p.read_text().splitlines()
    ]
    per_step = Counter(step for step, _, _ in rows)
    assert per_step == {s: 16 for s in range(1, 19)}  # every step trained on exactly one global batch
    by_epoch: dict[int, Counter] = {}
    for _, epoch, index in rows:
        by_epoch.setdefault(epoch, Counter())[index] += 1
    for epoch in range(4):
        assert by_epoch[epoch] == {i: 1 for i in range(64)}, epoch  # no repeat, no skip
    assert sum(by_epoch[4].values()) == 32 and max(by_epoch[4].values()) == 1
    assert set(by_epoch) == {0, 1, 2, 3, 4}


@pytest.mark.timeout(90)
@pytest.mark.parametrize("launcher", ["torch.distributed.run", "trainer.torchrun"])
def test_sigterm_to_torchrun_checkpoints_on_rank_0_and_workers_exit_0(tmp_path: Path, launcher: str) -> None:
    ck = tmp_path / "ck"
    args = ("--steps", "100000", "--workers", "0", "--checkpoint-dir", str(ck))
    t = TorchrunTrainer(tmp_path, *args, launcher=launcher)
    try:
        t.wait_for(lambda o: o.get("step", 0) >= 3, timeout=60)
        workers = descendants(t.proc.pid)
        assert len(workers) == 2, workers
        t.proc.send_signal(signal.SIGTERM)  # torchrun forwards it to each worker
        rc, lines = t.finish(60)
        alive = [p for p in workers if Path(f"/proc/{p}").exists()]
    finally:
        t.kill()
    saved = events(lines, "checkpoint_saved")
    assert len(saved) == 1 and saved[0]["reason"] == "signal", lines[-5:]
    step = saved[0]["step"]
    assert events(lines, "sigterm")[0]["step"] == step
    assert (ck / f"ckpt-{step:08d}.pt").exists() and events(lines, "done")[0]["stopped"] is True
    assert not alive, alive
    if launcher == "trainer.torchrun":
        # What gpudeck launches for `-m trainer`: a stop is a clean end, one line, no traceback.
        assert rc == 0, t.stderr()
        assert "Traceback" not in t.stderr() and "torchrun: stopped by SIGTERM" in t.stderr()
    else:
        # torchrun itself reports the forwarded signal as a failure (exit 1); its workers exited 0.
        assert rc in (0, 1), rc


@pytest.mark.timeout(120)
def test_oom_under_ddp_records_the_halved_micro_batch_exits_and_the_restart_uses_it(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    common = ["--steps", "4", "--batch-size", "16", "--workers", "0", "--checkpoint-dir", str(ck)]
    common += ["--inject-oom-above", "4"]  # this "GPU" fits 4 samples; each rank starts with 8
    t = TorchrunTrainer(tmp_path, *common)
    try:
        rc, lines = t.finish(90)  # a rank leaving must not leave the other hanging in all-reduce
    finally:
        t.kill()
    assert rc != 0
    assert events(lines, "oom_backoff")[0]["micro_batch"] == 4
    assert json.loads((ck / "oom_backoff.json").read_text()) == {"micro_batch": 4}

    again = run_torchrun(tmp_path, *common)
    assert not events(again, "oom_backoff")
    assert sorted(o["step"] for o in again if "loss" in o) == [1, 2, 3, 4]
    state = torch.load(ck / "ckpt-00000004.pt", weights_only=True)
    assert (state["micro_batch"], state["world_size"], state["samples_seen"]) == (4, 2, 64)


AGREE = """
import json, sys
import torch
from trainer import checkpoint as ckpt, dist as tdist
d = tdist.init(60)
root = sys.argv[1]
local = ckpt.newest_valid(f"{root}/rank{d.rank}")  # hosts without a shared disk
state = tdist.agree_on_checkpoint(d, local)
with open(f"{root}/out{d.rank}.json", "w") as f:
    json.dump({"step": state["step"], "w": state["model"]["w"].tolist()}, f)
d.barrier()  # as the trainer does: nobody destroys the group while a peer is still in it
d.exit(0)
"""


@pytest.mark.timeout(60)
def test_ranks_agree_on_the_newest_checkpoint_any_of_them_holds(tmp_path: Path) -> None:
    for rank, step in ((0, 3), (1, 7)):  # rank 1 alone holds the newest one
        (tmp_path / f"rank{rank}").mkdir()
        state = {"step": step, "model": {"w": torch.full((2,), float(step))}, "optimizer": {}}
        torch.save(state, tmp_path / f"rank{rank}" / f"ckpt-{step:08d}.pt")
    script = tmp_path / "agree.py"
    script.write_text(AGREE)
    launcher = torchrun(tmp_path)[
        : -len(["-m", "trainer"])
    ]  # the same torchrun, a script instead of -m trainer
    proc = subprocess.Popen(
        [sys.executable, *launcher, str(script), str(tmp_path)], cwd=ROOT, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=50)
        assert proc.returncode == 0, err
    finally:
        for pid in [*descendants(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(10)
    for rank in (0, 1):
        assert json.loads((tmp_path / f"out{rank}.json").read_text()) == {"step": 7, "w": [7.0, 7.0]}
