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


def frames(out: Path) -> list[tuple[int, int, int, float]]:
    """(epoch, counter, total, loss) of each train-bar frame with metrics in OUT's output.log."""
    splitter = LineSplitter()
    lines = splitter.feed((out / "output.log").read_bytes()) + splitter.flush()
    found = []
    for line in lines:
        m = FRAME.search(line)
        if m is not None:
            found.append((int(m[1]), int(m[2]), int(m[3]), float(m[4])))
    return found


def truth_of(out: Path) -> dict[int, float]:
    return {int(s): v for s, v in json.loads((out / "record.json").read_text())["points"]}


def never_drawn(out: Path) -> list[int]:
    """Recorded steps whose loss no frame shows (at its own counter or the one after it)."""
    truth, shown = truth_of(out), set()
    for epoch, n, total, loss in frames(out):
        for step in (epoch * total + n, epoch * total + n - 1):
            if step in truth and close(loss, truth[step]):
                shown.add(step)
    return sorted(set(truth) - shown)


def main() -> None:
    out = Path(sys.argv[1])
    truth = truth_of(out)
    kinds = {"own step": 0, "step before": 0, "both": 0, "neither": 0}
    drawn: set[int] = set()
    for epoch, n, total, loss in frames(out):
        step = epoch * total + n
        own = step in truth and close(loss, truth[step])
        before = step - 1 in truth and close(loss, truth[step - 1])
        kind = "both" if own and before else "own step" if own else "step before" if before else "neither"
        kinds[kind] += 1
        drawn.add(step)
        print(f"epoch {epoch} {n:>3}/{total} step {step:>4} loss {loss:<8} {kind}")
    never = never_drawn(out)
    print(f"\nframes with metrics: {sum(kinds.values())} {kinds}")
    print(f"recorded steps: {len(truth)}; a frame at their counter: {len(drawn & set(truth))}")
    print(f"loss never drawn: {len(never)} {never}")


if __name__ == "__main__":
    main()
