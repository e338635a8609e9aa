"""A job's journal records as TensorBoard event files (written by hand: no TensorFlow needed).

Each metric point becomes one scalar per value, at its step (or its position when it has none) and
its host time; node 0's points keep their names (`loss`, `lr`, `samples_per_sec`…), another
node's are under `node{N}/`. GPU samples become `gpu{index}/util` and `gpu{index}/mem_used_mib`
(under `node{N}/` for a node but 0), stepped by seconds since the node's first record. Resizes,
recoveries and adoptions become text under `events`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from remote_agent.exporter.snapshot import number

from ..errors import GpudeckError
from .event_file import EventFile

# Events worth a marker in TensorBoard's text tab: what changed the run's shape or its process.
MARKED_EVENTS = ("resized", "adopted", "recovered", "restarted", "gpus_assigned")


def writer_for(directory: Path) -> EventFile:
    try:
        return EventFile(directory)
    except OSError as e:
        raise GpudeckError(f"{directory}: cannot write event files: {e.strerror or e}") from None


class EventSink:
    """Writes one job's records as they come, node by node; the caller closes it."""

    def __init__(self, writer: EventFile) -> None:
        self.writer = writer
        self._position: dict[str, int] = {}  # per node: points without a step count as their position
        self._start: dict[str, float] = {}  # per node: the time of its first record
        self._step: dict[str, int] = {}  # per node: the last step seen, where an event is placed
        self.points = 0

    def write(self, node: str, records: list[dict[str, Any]]) -> None:
        prefix = "" if node == "0" else f"node{node}/"
        for record in records:
            t = number(record.get("t"))
            if t is not None:
                self._start.setdefault(node, t)
            kind = record.get("kind")
            if kind == "metric":
                self._metric(node, prefix, record, t)
            elif kind == "gpu" and t is not None:
                self._gpu(node, prefix, record, t)
            elif kind == "event" and record.get("event") in MARKED_EVENTS:
                self._event(node, record, t)

    def _metric(self, node: str, prefix: str, record: dict[str, Any], t: float | None) -> None:
        values = record.get("values")
        if not isinstance(values, dict):
            return
        position = self._position.get(node, 0)
        self._position[node] = position + 1
        step = number(values.get("step"))
        at = int(step) if step is not None else position
        self._step[node] = at
        scalars = [
            (f"{prefix}{key}" if prefix else key, float(x))
            for key, x in values.items()
            if (type(x) is float or type(x) is int) and key != "step"  # not bool, not "nan" strings
        ]
        if scalars:
            self.writer.add_values(scalars, at, t)
            self.points += len(scalars)

    def _gpu(self, node: str, prefix: str, record: dict[str, Any], t: float) -> None:
        scalars = []
        for gpu in record.get("gpus") or []:
            if not isinstance(gpu, dict):
                continue
            for key in ("util", "mem_used_mib"):
                v = number(gpu.get(key))
                if v is not None:
                    scalars.append((f"{prefix}gpu{gpu.get('index')}/{key}", v))
        if scalars:
            self.writer.add_values(scalars, int(t - self._start[node]), t)
            self.points += len(scalars)

    def _event(self, node: str, record: dict[str, Any], t: float | None) -> None:
        data = record.get("data")
        detail = ", ".join(f"{k}={v}" for k, v in data.items()) if isinstance(data, dict) else ""
        text = f"node {node}: {record.get('event')}" + (f" ({detail})" if detail else "")
        self.writer.add_text("events", text, self._step.get(node, 0), t)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
