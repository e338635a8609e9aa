"""The agent's stdlib TensorBoard reader (remote_agent/tbread) against files real writers make:
tensorboardX, torch.utils.tensorboard (simple values and TF2-style tensors), a TF2-style scalar
tensor with its metadata on the first value only, and a record cut in half as a writer flushes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboardX.proto.tensor_pb2 import TensorProto
from tensorboardX.record_writer import RecordWriter

from remote_agent.tbread.logdir import LogdirReader
from remote_agent.tbread.names import point_key


def test_tensorboardx_scalars_become_points_with_the_parsers_names(tmp_path: Path) -> None:
    w = SummaryWriter(str(tmp_path / "run"))
    for step in range(3):
        w.add_scalar("train/loss", 0.5**step, step)
        w.add_scalar("learning_rate", 3e-4, step)
        w.add_scalar("train/samples_per_second", 120.5, step)
        w.add_scalar("my/custom", step * 2, step)
        w.add_histogram("weights", [1.0, 2.0, 3.0], step)  # not a scalar: left alone
        w.add_text("note", "hello", step)
    w.close()
    points = LogdirReader(str(tmp_path)).poll()
    assert points == [
        {"step": s, "loss": 0.5**s, "lr": 3e-4, "samples_per_sec": 120.5, "my/custom": s * 2.0}
        for s in range(3)
    ]


def test_torch_writer_simple_and_new_style_tensors(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    w = TorchWriter(str(tmp_path))
    w.add_scalar("Loss/train", 0.75, 10)
    w.add_scalar("throughput", 900.0, 10)
    w.add_scalar("train_loss", 0.5, 11, new_style=True)  # a tensor with float_val, the scalars plugin
    w.close()
    assert LogdirReader(str(tmp_path)).poll() == [
        {"step": 10, "loss": 0.75, "samples_per_sec": 900.0},
        {"step": 11, "loss": 0.5},
    ]


def tf2_scalar(tag: str, value: float, step: int, first: bool) -> bytes:
    """What TF2's tf.summary.scalar writes: a float32 tensor_content, the plugin named once."""
    tensor = TensorProto(dtype=1, tensor_content=struct.pack("<f", value))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars")) if first else None
    v = Summary.Value(tag=tag, tensor=tensor, metadata=meta)
    return Event(wall_time=1.8e9 + step, step=step, summary=Summary(value=[v])).SerializeToString()


def test_tf2_tensors_and_a_half_written_record(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.1.host"
    writer = RecordWriter(str(path))
    writer.write(Event(wall_time=1.8e9, file_version="brain.Event:2").SerializeToString())
    writer.write(tf2_scalar("epoch_loss", 2.0, 0, first=True))
    writer.write(tf2_scalar("epoch_loss", 1.5, 1, first=False))
    writer.flush()
    reader = LogdirReader(str(tmp_path), str(tmp_path / "state.json"))
    assert reader.poll() == [{"step": 0, "loss": 2.0}, {"step": 1, "loss": 1.5}]
    # the writer is caught mid-record: half of the next one is on disk
    whole = path.read_bytes()
    writer.write(tf2_scalar("epoch_loss", 1.25, 2, first=False))
    writer.flush()
    record = path.read_bytes()[len(whole) :]
    path.write_bytes(whole + record[:10])
    assert reader.poll() == []  # nothing yet, and nothing lost
    path.write_bytes(whole + record)
    assert reader.poll() == [{"step": 2, "loss": 1.25}]
    reader.save()
    # a reader taking over (an adopting supervisor) starts where the first stopped
    assert LogdirReader(str(tmp_path), str(tmp_path / "state.json")).poll() == []


def test_nested_runs_are_found_and_a_validation_dir_is_a_split(tmp_path: Path) -> None:
    for run, loss in (("train", 0.5), ("validation", 0.75)):
        w = SummaryWriter(str(tmp_path / "fit" / run))
        w.add_scalar("epoch_loss", loss, 0)
        w.close()
    assert LogdirReader(str(tmp_path)).poll() == [
        {"step": 0, "loss": 0.5},
        {"step": 0, "val_loss": 0.75},
    ]


def test_a_file_that_is_no_record_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "events.out.tfevents.junk").write_bytes(b"not a record file at all, no")
    w = SummaryWriter(str(tmp_path))
    w.add_scalar("loss", 1.0, 0)
    w.close()
    assert LogdirReader(str(tmp_path)).poll() == [{"step": 0, "loss": 1.0}]


@pytest.mark.parametrize(
    ("tag", "key"),
    [
        ("loss", "loss"),
        ("train/loss", "loss"),
        ("train_loss", "loss"),
        ("lr", "lr"),
        ("learning_rate", "lr"),
        ("train/learning_rate", "lr"),
        ("eval/loss", "val_loss"),
        ("throughput", "samples_per_sec"),
        ("charts/episodic_return", "charts/episodic_return"),
    ],
)
def test_tags_as_point_keys(tag: str, key: str) -> None:
    assert point_key(tag, "") == key


def test_node_0_alone_follows_the_logdir_relative_to_the_workdir(tmp_path: Path) -> None:
    from remote_agent.tbread.follow import TensorBoardIn, logdir_of

    spec = {"tensorboard": "runs", "workdir": str(tmp_path), "node": "0"}
    assert logdir_of(spec) == str(tmp_path / "runs")
    assert TensorBoardIn.start_for(dict(spec, node="1"), str(tmp_path), lambda points: None) is None
    got: list[list[dict[str, object]]] = []
    w = SummaryWriter(str(tmp_path / "runs"))
    w.add_scalar("loss", 0.5, 3)
    w.close()
    follower = TensorBoardIn.start_for(spec, str(tmp_path), got.append)
    assert follower is not None
    follower.finish()  # the last read, as when the job ends
    assert got == [[{"step": 3, "loss": 0.5}]]
    assert (tmp_path / "tensorboard.json").stat().st_mode & 0o777 == 0o600
