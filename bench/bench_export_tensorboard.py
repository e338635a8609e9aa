"""`gpudeck export tensorboard`'s writing side: N metric points (loss, lr) through EventSink (one
event per point, written on the caller's thread: tui/export/event_file.py), beside the usual way —
tensorboardX's SummaryWriter.add_scalar per value — in the same run (issue 35 asks 1 M points in
<= 10 s). The journal's reading is timed elsewhere (bench_metrics: `metrics --json`).

    python bench/bench_export_tensorboard.py [--points 100000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tensorboardX import SummaryWriter  # noqa: E402

from tui.export.tensorboard import EventSink, writer_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    args = parser.parse_args()
    records = [
        {"kind": "metric", "t": 1.8e9 + i, "values": {"step": i, "loss": 1.0 / (i + 1), "lr": 3e-4}}
        for i in range(args.points)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        sink = EventSink(writer_for(Path(tmp) / "ours"))
        for i in range(0, len(records), 1000):  # in journal-sized batches, as the export gets them
            sink.write("0", records[i : i + 1000])
        sink.close()
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        w = SummaryWriter(logdir=str(Path(tmp) / "raw"))
        for r in records:
            v = r["values"]
            w.add_scalar("loss", v["loss"], global_step=v["step"], walltime=r["t"])
            w.add_scalar("lr", v["lr"], global_step=v["step"], walltime=r["t"])
        w.close()
        raw = time.perf_counter() - t0
    print(
        f"{args.points:,} points ({2 * args.points:,} scalars): EventSink {ours:.2f} s, SummaryWriter.add_scalar {raw:.2f} s"
    )
    print(f"  -> 1 M points at this rate: {ours * 1_000_000 / args.points:.0f} s (goal <= 10 s)")


if __name__ == "__main__":
    main()
