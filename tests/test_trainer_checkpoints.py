"""Which checkpoint a resume takes and which ones a run keeps, in the fast subset (no training)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from trainer import checkpoint as ckpt  # noqa: E402


def _save(directory: Path, step: int, run_id: str = "a", **extra: object) -> None:
    state = {
        "step": step,
        "run_id": run_id,
        "model": {"w": torch.full((2,), float(step))},
        "optimizer": {"state": {}, "param_groups": []},
        **extra,
    }
    ckpt.save_atomic(state, ckpt.path_for(str(directory), step))


def test_the_newest_whole_checkpoint_of_the_run_is_taken(tmp_path: Path) -> None:
    for step in (2, 4, 6):
        _save(tmp_path, step)
    _save(tmp_path, 8, run_id="b")  # another run's, in the same directory
    Path(ckpt.path_for(str(tmp_path), 9)).write_bytes(b"PK\x03\x04 torn by a crash")
    assert ckpt.list_steps(str(tmp_path)) == [9, 8, 6, 4, 2]
    found = ckpt.newest_valid(str(tmp_path), run_id="a")
    assert found is not None and found[0] == 6 and torch.equal(found[1]["model"]["w"], torch.full((2,), 6.0))
    # a file whose name and content disagree (a copy by hand) is not taken for its name's step
    state = torch.load(ckpt.path_for(str(tmp_path), 6), weights_only=True)
    torch.save(state, ckpt.path_for(str(tmp_path), 7))
    assert ckpt.newest_valid(str(tmp_path), run_id="a")[0] == 6
    torch.save(
        {"step": 10, "run_id": "a", "model": {}}, ckpt.path_for(str(tmp_path), 10)
    )  # no optimizer state
    assert ckpt.newest_valid(str(tmp_path), run_id="a")[0] == 6


def test_prune_keeps_the_newest_of_its_own_run(tmp_path: Path) -> None:
    for step in (1, 2, 3, 4):
        _save(tmp_path, step)
    _save(tmp_path, 5, run_id="b")
    ckpt.prune(str(tmp_path), 2, run_id="a")
    assert ckpt.list_steps(str(tmp_path)) == [5, 4, 3]


def test_the_oom_record_reads_back_and_a_bad_one_is_none(tmp_path: Path) -> None:
    assert ckpt.read_oom_record(str(tmp_path)) is None
    ckpt.write_oom_record(str(tmp_path), 12)
    assert ckpt.read_oom_record(str(tmp_path)) == 12
    (tmp_path / ckpt.OOM_RECORD).write_text("{}")
    assert ckpt.read_oom_record(str(tmp_path)) is None
