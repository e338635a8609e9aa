"""The agent's first `series` fold of a long job's journal (issue 13): CPU and wall seconds, the
median of a few rounds, each in a fresh process (no cache: the fold from byte 0, as the warmer's
first pass or an open before it does).

Two journals of the same N points (step i, loss 1/i, one spike): the dense one the writer writes
(`points` lines of 1,000 rows, tests/support/long_job.py) and the same records one per line (an
older journal). With --against CHECKOUT (another tree of gpudeck, e.g. `git archive main | tar -x
-C DIR`) each round also folds with that tree's code, interleaved, and the ratio is printed:
before/after in one run, whatever the machine's load does meanwhile.

    python bench/bench_series_fold.py [--points 1000000] [--rounds 3] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_CHILD = """
import json, sys, time
from pathlib import Path
from remote_agent.serving.seriesfold import SeriesFold
fold = SeriesFold(Path(sys.argv[1]))
c0, w0 = time.process_time(), time.perf_counter()
fold.update()
answer = fold.answer(200)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
loss = answer["metrics"]["loss"]["points"]
print(json.dumps({"cpu": cpu, "wall": wall, "last_seq": answer["last_seq"], "spike": max(p[1] for p in loss),
                  "skipped": fold.skipped}))
"""


def fold_once(tree: Path, directory: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(directory)], env=env, cwd=str(tree),
                         capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(out.stdout)


def make_journals(root: Path, points: int) -> dict[str, Path]:
    from remote_agent.storage.jsonio import dumps
    from remote_agent.storage.records import expand
    from tests.support.long_job import write_ended_job

    dense = write_ended_job(root / "agent", "20260101-000000-b16b16", "long", points, spike_at=points // 3)
    plain = root / "plain"
    plain.mkdir()
    with open(dense / "events.jsonl", "rb") as f, open(plain / "events.jsonl", "w") as out:
        for line in f:
            out.writelines(dumps(r) + "\n" for r in expand(json.loads(line)))
    return {"dense": dense, "one per line": plain}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another gpudeck tree to fold with, round by round")
    a = ap.parse_args()
    trees = {"this tree": ROOT} | ({"against": a.against.resolve()} if a.against else {})
    with tempfile.TemporaryDirectory() as tmp:
        journals = make_journals(Path(tmp), a.points)
        for name, directory in journals.items():
            size = os.stat(directory / "events.jsonl").st_size
            runs: dict[str, list[dict]] = {t: [] for t in trees}
            for _ in range(a.rounds):
                for tree_name, tree in trees.items():
                    runs[tree_name].append(fold_once(tree, directory))
            print(f"{name} journal, {a.points:,} points, {size / 1e6:.1f} MB:")
            for tree_name, rows in runs.items():
                cpu = statistics.median(r["cpu"] for r in rows)
                wall = statistics.median(r["wall"] for r in rows)
                last = rows[-1]
                print(
                    f"  {tree_name:10s} CPU {cpu:.2f} s, wall {wall:.2f} s (last_seq {last['last_seq']}, "
                    f"spike kept: {last['spike'] == 50.0}, skipped {last['skipped']})"
                )
            if a.against:
                ratio = statistics.median(r["cpu"] for r in runs["this tree"]) / statistics.median(
                    r["cpu"] for r in runs["against"]
                )
                print(f"  this tree / against: {ratio:.2f}x CPU")


if __name__ == "__main__":
    main()
