"""Logger files, part by part: the job's Lightning version dir is found (never a previous run's),
metrics.csv is read as Lightning writes it (appends, a rewrite under a new header, a half-written
line), rows become points at steps done, event files too, and the gate keeps a logged series single
without dropping a printed value the logger does not give."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from tensorboardX import SummaryWriter

from remote_agent.loggerfiles.csvread import CsvMetricsReader
from remote_agent.loggerfiles.discover import VersionDirFinder
from remote_agent.loggerfiles.follow import LoggerFilesIn, wanted
from remote_agent.loggerfiles.gate import LoggerGate
from remote_agent.loggerfiles.points import csv_points
from remote_agent.spec import JobSpec, SpecError


def version(workdir: Path, n: int, age: float = 0.0) -> Path:
    d = workdir / "lightning_logs" / f"version_{n}"
    d.mkdir(parents=True)
    if age:
        old = time.time() - age
        os.utime(d, (old, old))
    return d


def test_the_newest_version_dir_made_after_the_start_is_the_jobs(tmp_path: Path) -> None:
    finder = VersionDirFinder(str(tmp_path), time.time())
    assert finder.look() is None  # no lightning_logs/ at all
    version(tmp_path, 7, age=3600)  # a previous run's, however high its number
    assert finder.look() is None
    version(tmp_path, 2)
    version(tmp_path, 3)
    assert finder.look() == str(tmp_path / "lightning_logs" / "version_3")


def test_metrics_csv_appends_a_rewrite_and_a_half_written_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    reader = CsvMetricsReader(str(path))
    assert reader.poll() == []  # not there yet
    path.write_text("epoch,step,train_loss\n0,0,0.9\n0,1,0.")
    assert reader.poll() == [{"epoch": "0", "step": "0", "train_loss": "0.9"}]
    with path.open("a") as f:
        f.write("7\n")
    assert reader.poll() == [{"epoch": "0", "step": "1", "train_loss": "0.7"}]
    # a new metric: Lightning rewrites the file under a new header; only the new row is new
    path.write_text("epoch,step,train_loss,val_loss\n0,0,0.9,\n0,1,0.7,\n0,1,,0.8\n")
    assert reader.poll() == [{"epoch": "0", "step": "1", "val_loss": "0.8"}]
    assert reader.poll() == []


def test_rows_become_points_at_steps_done_with_the_parsers_names() -> None:
    rows = [
        {"epoch": "0", "step": "0", "train_loss_step": "0.9"},
        {"epoch": "0", "step": "1", "train_loss_step": "0.7", "lr-SGD": "0.1"},
        {"epoch": "0", "step": "1", "val_loss": "0.8", "train_loss_epoch": "0.8"},
        {"epoch": "0", "step": "x", "train_loss": "1"},  # no step: not a point
    ]
    assert csv_points(rows) == [
        {"step": 1, "epoch": 0, "loss": 0.9},
        {"step": 2, "epoch": 0, "loss": 0.7, "lr-SGD": 0.1, "val_loss": 0.8, "loss_epoch": 0.8},
    ]


def metric(**values: Any) -> tuple[str, dict[str, Any]]:
    return ("metric", {"values": values})


def test_the_gate_holds_stepless_values_until_the_loggers_names_are_known() -> None:
    gate = LoggerGate()
    before = [metric(epoch=0, loss=1.0)]
    assert gate.printed(before) == before  # no logger dir: printed values go as they are
    gate.found()
    stepped = metric(step=3, loss=0.5)
    event = ("event", {"event": "x"})
    assert gate.printed([metric(epoch=0, loss=0.9, acc=0.1), stepped, event]) == [stepped, event]
    assert gate.logged([{"step": 1, "epoch": 0, "loss": 0.9}]) == [metric(epoch=0, acc=0.1)]
    # from now on at once: the logged name goes, the others stay; nothing left but an index: dropped
    assert gate.printed([metric(epoch=0, loss=0.8), metric(val_acc=0.5, loss=0.7)]) == [metric(val_acc=0.5)]


def test_held_values_go_to_the_journal_whole_when_the_logger_never_gave_points() -> None:
    gate = LoggerGate()
    gate.found()
    held = [metric(epoch=0, loss=0.9), metric(epoch=0, loss=0.8)]
    assert gate.printed(held) == []
    assert gate.final([]) == held


def test_a_printed_stepless_value_looks_for_the_dir_at_once() -> None:
    gate = LoggerGate()
    looks: list[int] = []
    gate.look = lambda: bool(looks.append(1)) or True
    assert gate.printed([metric(step=1, loss=0.9)]) == [metric(step=1, loss=0.9)]
    assert looks == []  # a stepped value costs no look
    assert gate.printed([metric(epoch=0, loss=0.9)]) == []  # the dir is there: held for the logger
    assert looks == [1]


def follower(workdir: Path, node_dir: Path, got: list[dict[str, Any]]) -> LoggerFilesIn:
    return LoggerFilesIn(str(workdir), str(node_dir), got.extend, lambda: None)


def test_event_files_are_read_and_an_adopter_goes_on_where_it_stopped(tmp_path: Path) -> None:
    workdir, node_dir = tmp_path / "work", tmp_path / "node"
    workdir.mkdir()
    node_dir.mkdir()
    got: list[dict[str, Any]] = []
    first = follower(workdir, node_dir, got)
    writer = SummaryWriter(str(version(workdir, 0)))
    writer.add_scalar("train_loss", 0.5, 0)
    writer.close()
    first.read_once()
    first.read_once()  # the reader finds the dir, then its event file
    assert got == [{"step": 1, "loss": 0.5}]
    writer = SummaryWriter(str(workdir / "lightning_logs" / "version_0"), filename_suffix=".resumed")
    writer.add_scalar("train_loss", 0.25, 1)
    writer.close()
    later = follower(workdir, node_dir, got)  # an adopter: the state file says the dir and offsets
    later.read_once()
    assert got == [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25}]


@pytest.mark.parametrize(
    ("fields", "read"),
    [({}, True), ({"logger_files": False}, False), ({"tensorboard": "tb"}, False), ({"node": "1"}, False)],
)
def test_who_reads_logger_files(fields: dict[str, Any], read: bool) -> None:
    assert wanted(fields) is read


def test_the_spec_switch_is_off_or_absent() -> None:
    base = {"id": "20261206-081500-abcdef", "name": "j", "argv": ["true"]}
    assert JobSpec.from_wire(dict(base, logger_files=False)).to_wire()["logger_files"] is False
    assert "logger_files" not in JobSpec.from_wire(dict(base, logger_files=True)).to_wire()
    with pytest.raises(SpecError, match="spec.logger_files: expected true or false"):
        JobSpec.from_wire(dict(base, logger_files="no"))
