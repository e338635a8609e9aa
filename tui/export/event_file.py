"""One TensorBoard event file, written on the caller's thread: tensorboardX's protobufs and record
framing, without SummaryWriter's queue to a writer process (a hand-off per scalar cost ~10x the
writing itself: bench/bench_export_tensorboard.py). One event per point, holding all its values."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any


class EventFile:
    def __init__(self, directory: Path) -> None:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary
        from tensorboardX.record_writer import RecordWriter

        self._event, self._summary = Event, Summary
        directory.mkdir(parents=True, exist_ok=True)
        # the name TensorBoard looks for: events.out.tfevents.<time>.<host>
        path = directory / f"events.out.tfevents.{time.time():.6f}.{socket.gethostname()}"
        self._records = RecordWriter(str(path))
        self._unflushed = False
        self._write(Event(wall_time=time.time(), file_version="brain.Event:2"))

    def _write(self, event: Any) -> None:
        self._records.write(event.SerializeToString())
        self._unflushed = True

    def add_values(self, values: list[tuple[str, float]], step: int, walltime: float | None) -> None:
        """Scalars of one point: each a (tag, value)."""
        summary = self._summary(value=[self._summary.Value(tag=t, simple_value=v) for t, v in values])
        self._write(
            self._event(wall_time=time.time() if walltime is None else walltime, step=step, summary=summary)
        )

    def add_text(self, tag: str, text: str, step: int, walltime: float | None) -> None:
        from tensorboardX.summary import text as text_summary

        event = self._event(
            wall_time=time.time() if walltime is None else walltime,
            step=step,
            summary=text_summary(tag, text),
        )
        self._write(event)

    def flush(self) -> None:
        if self._unflushed:
            self._records.flush()
            self._unflushed = False

    def close(self) -> None:
        self.flush()
        self._records.close()
