"""`gpudeck export tensorboard`'s writing side: N metric points (loss, lr) through EventSink (hand-built
protobuf bytes, CRC-32C in C: tui/export/event_file.py), beside the old path in the same run —
the same sink writing tensorboardX's generated protobufs through its RecordWriter (pure-Python
CRC) — and, with --summary-writer, tensorboardX's SummaryWriter.add_scalar per value. Issue 35
asks 1 M points in <= 10 s. Medians of --rounds. The journal's reading is timed elsewhere
(bench_metrics: `metrics --json`).

    python bench/bench_export_tensorboard.py [--points 1000000] [--rounds 3] [--summary-writer]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tensorboardX import SummaryWriter  # noqa: E402

from tui.export.tensorboard import EventSink, writer_for  # noqa: E402


class TbxEventFile:
    """The old path (main before this bench's change): tensorboardX's protobufs and RecordWriter."""

    def __init__(self, directory: Path) -> None:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary
        from tensorboardX.record_writer import RecordWriter

        self._event, self._summary = Event, Summary
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"events.out.tfevents.{time.time():.6f}.{socket.gethostname()}"
        self._records = RecordWriter(str(path))
        self._records.write(Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString())

    def add_values(self, values: list[tuple[str, float]], step: int, walltime: float | None) -> None:
        summary = self._summary(value=[self._summary.Value(tag=t, simple_value=v) for t, v in values])
        event = self._event(wall_time=walltime or time.time(), step=step, summary=summary)
        self._records.write(event.SerializeToString())

    def flush(self) -> None:
        self._records.flush()

    def close(self) -> None:
        self._records.close()


def through_sink(writer: Any, records: list[dict[str, Any]]) -> float:
    t0 = time.perf_counter()
    sink = EventSink(writer)
    for i in range(0, len(records), 1000):  # in journal-sized batches, as the export gets them
        sink.write("0", records[i : i + 1000])
    sink.close()
    return time.perf_counter() - t0


def summary_writer(directory: Path, records: list[dict[str, Any]]) -> float:
    t0 = time.perf_counter()
    w = SummaryWriter(logdir=str(directory))
    for r in records:
        v = r["values"]
        w.add_scalar("loss", v["loss"], global_step=v["step"], walltime=r["t"])
        w.add_scalar("lr", v["lr"], global_step=v["step"], walltime=r["t"])
    w.close()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--summary-writer", action="store_true", help="also time SummaryWriter (slow)")
    args = parser.parse_args()
    records = [
        {"kind": "metric", "t": 1.8e9 + i, "values": {"step": i, "loss": 1.0 / (i + 1), "lr": 3e-4}}
        for i in range(args.points)
    ]
    times: dict[str, list[float]] = {"ours": [], "old": [], "summary_writer": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):  # interleaved, so load on the machine hits both alike
            times["ours"].append(through_sink(writer_for(Path(tmp) / f"ours{r}"), records))
            times["old"].append(through_sink(TbxEventFile(Path(tmp) / f"old{r}"), records))
            if args.summary_writer:
                times["summary_writer"].append(summary_writer(Path(tmp) / f"raw{r}", records))
    med = {k: statistics.median(v) for k, v in times.items() if v}
    line = f"{args.points:,} points ({2 * args.points:,} scalars), median of {args.rounds}: "
    line += (
        f"EventSink {med['ours']:.2f} s, old path (tensorboardX protobufs + RecordWriter) {med['old']:.2f} s"
    )
    if "summary_writer" in med:
        line += f", SummaryWriter.add_scalar {med['summary_writer']:.2f} s"
    print(line)
    print(
        f"  -> 1 M points: {med['ours'] * 1_000_000 / args.points:.1f} s (goal <= 10 s), "
        f"old path {med['old'] * 1_000_000 / args.points:.1f} s; {med['old'] / med['ours']:.1f}x faster"
    )


if __name__ == "__main__":
    main()
