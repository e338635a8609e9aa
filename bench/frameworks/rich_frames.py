"""What Lightning's Rich bar printed, frame by frame, against the CSVLogger record (issue 32).

    python bench/frameworks/rich_frames.py OUT_DIR     # a lightning-rich case's outputs (run.py)

OUT_DIR holds `output.log` (the job's bytes) and `record.json`. For every Rich frame of the train
bar with metrics: its epoch, counter and loss, and whether that loss is the record's at the
frame's own step, at the step before it (drawn after Lightning moved the counter, before it set
that batch's values), or both (equal at print precision). Then the steps no frame was drawn at.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from remote_agent.supervision.lines import LineSplitter  # noqa: E402

FRAME = re.compile(r"Epoch (\d+)(?:/\d+)?\s+[━╸╺─]+\s+(\d+)/(\d+) .*?train_loss: ([-\d.]+|nan)")


def close(a: float, b: float) -> bool:
    return abs(a - b) <= max(5e-4, 5e-3 * abs(b))


def main() -> None:
    out = Path(sys.argv[1])
    truth = {int(s): v for s, v in json.loads((out / "record.json").read_text())["points"]}
    splitter = LineSplitter()
    lines = splitter.feed((out / "output.log").read_bytes()) + splitter.flush()
    kinds = {"own step": 0, "step before": 0, "both": 0, "neither": 0}
    drawn: set[int] = set()
    for line in lines:
        m = FRAME.search(line)
        if m is None:
            continue
        epoch, n, total, loss = int(m[1]), int(m[2]), int(m[3]), float(m[4])
        step = epoch * total + n
        own, before = (
            step in truth and close(loss, truth[step]),
            step - 1 in truth and close(loss, truth[step - 1]),
        )
        kind = "both" if own and before else "own step" if own else "step before" if before else "neither"
        kinds[kind] += 1
        drawn.add(step)
        print(f"epoch {epoch} {n:>3}/{total} step {step:>4} loss {loss:<8} {kind}")
    never = sorted(set(truth) - drawn)
    print(f"\nframes with metrics: {sum(kinds.values())} {kinds}")
    print(
        f"recorded steps: {len(truth)}; drawn at: {len(drawn & set(truth))}; never drawn: {len(never)} {never}"
    )


if __name__ == "__main__":
    main()
