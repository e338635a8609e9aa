"""What the per-node pace (issue 34) costs: the agent's fold of a node's journal and the size of its
job object, this tree beside a baseline tree (default: the commit before the pace), in the same
run; and the client's straggler judgement beside the JSON parse of the same job objects.

The journal: 10 minutes of a node stepping at 10 Hz (6,000 metric records) with a GPU sample every
10 s, the node live (its lock held), so the job object carries its `pace`.

    python bench/bench_pace.py [--baseline 87e3b22] [--runs 15]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FOLD = """
import json, statistics, sys, time
from pathlib import Path
from remote_agent.jobstate import JobView
d, runs = Path(sys.argv[1]), int(sys.argv[2])
times = []
for _ in range(runs):
    view = JobView("20261206-000000-aaaaaa", "0", d)
    start = time.perf_counter()
    obj = view.refresh()
    times.append(time.perf_counter() - start)
print(json.dumps({"times": times, "bytes": len(json.dumps(obj)), "obj": obj}))
"""


def make_journal(d: Path) -> None:
    d.mkdir(parents=True)
    spec = {"id": "20261206-000000-aaaaaa", "node": "0", "argv": ["x"], "multinode": {"nodes": 2}}
    (d / "spec.json").write_text(json.dumps(spec))
    t0, seq, lines = time.time() - 600, 0, []

    def add(t: float, **rec: object) -> None:
        nonlocal seq
        seq += 1
        lines.append(json.dumps({"seq": seq, "t": t, **rec}))

    add(t0, kind="state", state="starting", supervisor_pid=os.getpid())
    add(t0, kind="state", state="running", pid=os.getpid())
    for i in range(6000):
        t = t0 + i / 10
        add(t, kind="metric", values={"step": i, "loss": 1.0 / (1 + i)})
        if i % 100 == 0:
            add(
                t,
                kind="gpu",
                gpus=[
                    {"index": g, "uuid": f"GPU-{g}", "util": 90 + g, "mem_used_mib": 1000} for g in range(8)
                ],
            )
    (d / "events.jsonl").write_text("\n".join(lines) + "\n")
    (d / "lock").write_text("")


def fold(tree: Path, d: Path, runs: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", FOLD, str(d), str(runs)],
        env=env,
        cwd=tree,  # `-c` puts the current directory first on sys.path: the tree's own
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="87e3b22", help="git ref to compare with")
    parser.add_argument("--runs", type=int, default=15, help="median of about this many runs (default 15)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from remote_agent.pace.straggler import NodePace, judge, settings

    with tempfile.TemporaryDirectory(prefix="bench-pace-") as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.baseline], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        d = Path(tmp) / "jobs" / "20261206-000000-aaaaaa" / "0"
        make_journal(d)
        fd = os.open(str(d / "lock"), os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # the node is live: its supervisor "holds" the lock
        # alternated, a few runs at a time: a busy machine's slow spell hits both trees alike
        ours, theirs = fold(ROOT, d, 3), fold(base, d, 3)
        for _ in range(max(0, args.runs // 3 - 1)):
            ours["times"] += fold(ROOT, d, 3)["times"]
            theirs["times"] += fold(base, d, 3)["times"]
        os.close(fd)
    ours["fold_s"], theirs["fold_s"] = statistics.median(ours["times"]), statistics.median(theirs["times"])
    pace = ours["obj"]["pace"]
    print(f"agent: fold of a 10-min 10 Hz node journal, median of {len(ours['times'])} (alternated):")
    print(f"  this tree        {ours['fold_s'] * 1000:8.1f} ms   job object {ours['bytes']:7,} bytes")
    print(f"  {args.baseline:<16} {theirs['fold_s'] * 1000:8.1f} ms   job object {theirs['bytes']:7,} bytes")
    print(f"  pace: {len(pace['steps'])} step points, {len(pace['util'])} GPU points")
    for count in (2, 8, 64):
        answer = json.dumps([dict(ours["obj"], node=str(i)) for i in range(count)])
        parse, judging = [], []
        for _ in range(args.runs):
            start = time.perf_counter()
            objs = json.loads(answer)
            parse.append(time.perf_counter() - start)
            start = time.perf_counter()
            judge([p for o in objs if (p := NodePace.read(o["node"], o["pace"])) is not None], settings())
            judging.append(time.perf_counter() - start)
        print(
            f"client: {count:3} nodes: parse their job objects {statistics.median(parse) * 1000:7.1f} ms, "
            f"judge {statistics.median(judging) * 1000:7.1f} ms (median of {args.runs})"
        )


if __name__ == "__main__":
    main()
