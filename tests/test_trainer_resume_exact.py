"""Resume is bit-exact, in the fast subset: the trainer's own loop, in-process, on a tiny model.

`test_trainer.py::test_resume_after_sigterm_is_bit_exact` checks the same through real subprocesses and
a real SIGTERM (slow). Here the loop (`trainer.loop._train`) runs in this process with a stop flag
raised after step K, exactly where a SIGTERM would raise it: the run finishes the step in flight,
checkpoints and returns; a second run resumes from that checkpoint. Its losses, and the final model and
optimizer state, must equal an uninterrupted run's, float for float.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from trainer import checkpoint as ckpt  # noqa: E402
from trainer import resume  # noqa: E402
from trainer.args import parse_args  # noqa: E402
from trainer.build import build_parts, capture, restore  # noqa: E402
from trainer.data import Layout  # noqa: E402
from trainer.dist import Dist  # noqa: E402
from trainer.loop import StopFlag, _train  # noqa: E402
from trainer.report import Reporter  # noqa: E402
from trainer.startup import Startup  # noqa: E402

STEPS = 6
STOP_AFTER = 2  # the flag goes up while step 2 is reported; step 3 is the last one of the first run


class Recorder(Reporter):
    """The trainer's report, kept as objects; raises the stop flag once step `stop_at` is reported."""

    def __init__(self, stop: StopFlag, stop_at: int | None = None) -> None:
        super().__init__(True)
        self.lines: list[dict[str, Any]] = []
        self.stop, self.stop_at = stop, stop_at

    def line(self, obj: dict[str, Any]) -> None:
        self.lines.append(obj)
        if obj.get("step") == self.stop_at and "event" not in obj:
            self.stop.signal = signal.SIGTERM  # what StopFlag's handler does on a real SIGTERM


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One intra-op thread: the same reduction order in every run (and this process's setting back)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_args(directory: Path) -> Any:
    flags = f"--steps {STEPS} --batch-size 8 --synthetic-size 40 --image-size 8 --workers 0 --seed 3"
    args = parse_args([*flags.split(), "--augment", "--run-id", "exact", "--checkpoint-dir", str(directory)])
    args.run_id = resume.run_id(args)
    return args


def train(directory: Path, stop_at: int | None = None) -> list[dict[str, Any]]:
    args = tiny_args(directory)
    stop = StopFlag()  # never installed: no signal handler of this process changes
    out = Recorder(stop, stop_at)
    assert _train(args, Dist(), stop, out, Startup()) == 0
    return out.lines


def losses(lines: list[dict[str, Any]]) -> dict[int, float]:
    return {o["step"]: o["loss"] for o in lines if "event" not in o}


def final_state(directory: Path) -> dict[str, Any]:
    found = ckpt.newest_valid(str(directory))
    assert found is not None and found[0] == STEPS
    return found[1]


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Equal to the bit: tensors with torch.equal, containers entry by entry."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_a_stopped_and_resumed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    whole = train(tmp_path / "whole")

    first = train(tmp_path / "part", stop_at=STOP_AFTER)
    stopped = [o for o in first if o.get("event") == "sigterm"]
    assert [o["step"] for o in stopped] == [STOP_AFTER + 1]
    rest = train(tmp_path / "part")
    assert rest[0]["event"] == "resumed" and rest[0]["step"] == STOP_AFTER + 1

    resumed = {**losses(first), **losses(rest)}
    assert sorted(resumed) == list(range(1, STEPS + 1))
    assert resumed == losses(whole)  # exact float equality, step by step
    a, b = final_state(tmp_path / "whole"), final_state(tmp_path / "part")
    for part in ("model", "optimizer", "scheduler", "samples_seen"):
        assert_same(a[part], b[part], part)


def draws() -> tuple[Any, ...]:
    return torch.rand(4), np.random.rand(4).tolist(), random.random()


def test_restore_puts_back_every_rng_stream(tmp_path: Path) -> None:
    """No step of the reference trainer draws from the global RNGs, so the runs above cannot see
    whether a resume restores them; a training script that adds dropout would. Checked directly."""
    args = tiny_args(tmp_path)
    parts = build_parts(args, args.num_classes, torch.device("cpu"))
    state = capture(parts, 0, 0, Layout.make(8, 1, None), args)
    expected = draws()
    torch.manual_seed(99)  # another run's streams
    np.random.seed(99)
    random.seed(99)
    restore(parts, state)
    assert_same(draws(), expected)
