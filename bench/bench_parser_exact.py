"""How exactly the job's parser reads the recorded framework output of the corpus (issue 32):
per record of tests/data/metrics/streams_round4.jsonl (lines) and streams_frameworks.jsonl
(output bytes, through the supervisor's line splitter) and per class, whether the points read
are exact, right but without their step (no-step), hold a value the output does not say at that
step (false), or leave points out (missing). `--against DIR` reads the same records with another
tree's parser (e.g. a `git archive` of the base) in a child process, side by side.

    python bench/bench_parser_exact.py [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "metrics"
CORPUS = (DATA / "streams_round4.jsonl", DATA / "streams_frameworks.jsonl")


def records() -> list:
    return [json.loads(x) for f in CORPUS for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]


def read_all(tree: Path) -> list:
    """Each record's points as `tree`'s LineParser reads them (flushed at the end when it can)."""
    sys.path.insert(0, str(tree))
    from remote_agent.metrics import LineParser
    from remote_agent.supervision.lines import LineSplitter

    out = []
    for record in records():
        parser = LineParser()
        lines = record.get("lines")
        if lines is None:  # output bytes as the job printed them
            splitter = LineSplitter()
            lines = splitter.feed(record["output"].encode("utf-8")) + splitter.flush()
        points = [p for p in map(parser.parse, lines) if p is not None]
        out.append(points + (parser.flush() if hasattr(parser, "flush") else []))
    return out


def verdict(points: list, expected: list) -> str:
    """exact; false: a point that is no part of any point the output says (at its step, when it
    has one); no-step: the expected points without their steps; missing: fewer points than said."""
    if points == expected:
        return "exact"
    for p in points:
        if not any(_part_of(p, e) for e in expected):
            return "false"
    if points == [{k: v for k, v in e.items() if k != "step"} for e in expected]:
        return "no-step"
    return "missing"


def _part_of(point: dict, said: dict) -> bool:
    return all(k in said and json.dumps(said[k]) == json.dumps(v) for k, v in point.items())


def table(results: list, records: list) -> dict:
    counts: dict = {}
    for points, record in zip(results, records, strict=True):
        by_class = counts.setdefault(record["class"], {"exact": 0, "no-step": 0, "false": 0, "missing": 0})
        by_class[verdict(points, record["expected"])] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", help="another source tree whose parser reads the same records")
    ap.add_argument("--tree", help=argparse.SUPPRESS)  # child: print that tree's points as JSON
    args = ap.parse_args()
    if args.tree:
        print(json.dumps(read_all(Path(args.tree))))
        return
    corpus = records()
    trees = [("this tree", ROOT)] + ([("against", Path(args.against).resolve())] if args.against else [])
    for name, tree in trees:
        found = subprocess.run(
            [sys.executable, __file__, "--tree", str(tree)], capture_output=True, text=True, check=True
        ).stdout
        counts = table(json.loads(found), corpus)
        total = {k: sum(c[k] for c in counts.values()) for k in ("exact", "no-step", "false", "missing")}
        print(f"{name} ({tree}): {len(corpus)} records: " + ", ".join(f"{k} {v}" for k, v in total.items()))
        for cls, c in counts.items():
            print(f"  {cls:12} " + "  ".join(f"{k} {v}" for k, v in c.items()))


if __name__ == "__main__":
    main()
