"""The hand-built event bytes (tui/export/event_file.py) are what TensorBoard's own protobufs make, and
their TFRecord framing carries the CRCs a checking reader verifies."""

from __future__ import annotations

import struct
from pathlib import Path

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.proto.summary_pb2 import Summary
from tensorboardX.summary import text as text_summary

from remote_agent.tbread.crc import masked_crc32c
from tui.export.event_file import EventFile


def records(path: Path) -> list[bytes]:
    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        assert struct.unpack_from("<I", data, at + 8)[0] == masked_crc32c(data[at : at + 8])
        body = data[at + 12 : at + 12 + length]
        assert struct.unpack_from("<I", data, at + 12 + length)[0] == masked_crc32c(body)
        out.append(body)
        at += 16 + length
    return out


def test_events_are_byte_equal_to_tensorboards_protobufs(tmp_path: Path) -> None:
    writer = EventFile(tmp_path)
    writer.add_values([("loss", 0.25), ("train/lr", 3e-4)], 7, 1.8e9)
    writer.add_values([("loss", 1.5)], -2, 1.8e9 + 1)  # int64 steps may be negative
    writer.add_text("events", "node 0: resized (nodes=2)", 300, 1.8e9 + 2)
    writer.close()
    (path,) = tmp_path.iterdir()
    bodies = records(path)
    assert Event.FromString(bodies[0]).file_version == "brain.Event:2"
    V = Summary.Value
    expected = [
        Event(
            wall_time=1.8e9,
            step=7,
            summary=Summary(value=[V(tag="loss", simple_value=0.25), V(tag="train/lr", simple_value=3e-4)]),
        ),
        Event(wall_time=1.8e9 + 1, step=-2, summary=Summary(value=[V(tag="loss", simple_value=1.5)])),
        Event(wall_time=1.8e9 + 2, step=300, summary=text_summary("events", "node 0: resized (nodes=2)")),
    ]
    assert bodies[1:] == [e.SerializeToString() for e in expected]


def test_tensorboards_loader_reads_every_event(tmp_path: Path) -> None:
    writer = EventFile(tmp_path)
    for step in range(50):
        writer.add_values([("loss", 1.0 / (step + 1))], step, 1.8e9 + step)
    writer.close()
    (path,) = tmp_path.iterdir()
    events = list(EventFileLoader(str(path)).Load())
    scalars = [(e.step, e.summary.value[0].tag) for e in events if e.summary.value]
    assert scalars == [(s, "loss") for s in range(50)]
