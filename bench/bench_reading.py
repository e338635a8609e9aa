"""Reading big and many journals, measured: `metrics --json` of a long job, `ps --all` of many ended
jobs, and the journal's bytes per metric point against the output line it came from.

The jobs are written the way a supervisor writes them (JournalWriter: starting, running, the points
in bursts, exited; output.log holds the printed lines), straight into a throwaway GPUDECK_HOME, so a
million-point job takes seconds to make instead of a run. The CLI is timed as a user runs it.
Baselines, side by side in the same run: reading and JSON-decoding every journal line in one Python
process (what any reader pays at least), and `ps --all` with a single job (the CLI's and agent's own
start-up cost).

Bytes per point are also measured for realistic lines (a Hugging Face Trainer log dict, an
`epoch E step S/T loss X lr Y` line), parsed by the supervisor's parser, journaled in bursts (a
flood: many lines per read of the output) and one line per write (a trainer slower than the reads).
CPU costs in a fresh process: the agent's first fold of the big journal (no summary cache) and the
journal writer per point.

With --against CHECKOUT (another tree of gpudeck, e.g. the main branch's) every CLI timing is also
taken with that tree's code, interleaved round by round on the same files, and the ratio printed:
before/after in one run, whatever the machine's load does meanwhile. Each job is listed once before
the timed rounds, so both trees read its folded summary (cached beside the journal) alike. Compare
trees whose job summary has the same fields (remote_agent/jobstate.py): otherwise each rejects the
other's cache and folds the whole journal again every round (e.g. `git archive BASE | tar -x -C DIR`
of this branch's base, not a main that has moved on). The other tree reads a journal written by its
own writer (the same points, the same fixed clock), and both trees' `metrics --json` outputs are
compared byte for byte.

    python bench/bench_reading.py [--points 1000000] [--jobs 1000] [--rounds 3] [--against DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remote_agent.storage.journal import JournalWriter  # noqa: E402

BURST = 2000  # points per append_many, as the supervisor's reads of output.log come in


def make_job(agent: Path, job_id: str, name: str, points: int, workdir: str) -> Path:
    directory = agent / "jobs" / job_id / "0"
    directory.mkdir(parents=True)
    spec = {"id": job_id, "name": name, "node": "0", "argv": ["python3", "train.py"], "workdir": workdir,
            "env": {}, "setup": [], "grace": 60.0, "created_at": time.time(), "stop_signal": "SIGTERM"}  # fmt: skip
    (directory / "spec.json").write_text(json.dumps(spec))
    (directory / "lock").touch()
    real_time, ticks = time.time, iter(range(10**9))
    # A fixed clock (a write every 10 ms from 2026-01-01): any tree's writer writes the same times,
    # so two trees' `metrics --json` outputs can be compared byte for byte.
    time.time = lambda: 1767225600.0 + next(ticks) / 100  # type: ignore[assignment]
    try:
        _write_journal(directory, points)
    finally:
        time.time = real_time  # type: ignore[assignment]
    return directory


def _write_journal(directory: Path, points: int) -> None:
    journal = JournalWriter(directory / "events.jsonl")
    journal.append("state", state="starting", supervisor_pid=1)
    journal.append("state", state="running", pid=2)
    with open(directory / "output.log", "w") as output:
        for start in range(1, points + 1, BURST):
            lines = [f"step={i} loss={1.0 / i:.6f}" for i in range(start, min(points, start + BURST - 1) + 1)]
            output.write("\n".join(lines) + "\n")
            journal.append_many([("metric", {"values": {"step": i, "loss": round(1.0 / i, 6)}}) for i in
                                 range(start, start + len(lines))])  # fmt: skip
    journal.append("state", state="exited", exit_code=0, signal=None)
    journal.close()


def realistic_lines(kind: str, n: int) -> list[str]:
    """Lines as trainers print them, numbers varying as in a run (a loss with 4 decimals, a decaying lr)."""
    if kind == "hf":  # Hugging Face Trainer's log dict
        return [f"{{'loss': {2.5 / (1 + i / 500):.4f}, 'grad_norm': {0.8 + (i * 7919 % 1000) / 997:.7f}, "
                f"'learning_rate': {5e-05 * (1 - i / n):.4g}, 'epoch': {i / 400:.2f}}}" for i in range(1, n + 1)]  # fmt: skip
    if kind == "epoch":
        return [f"epoch {i // 500} step {i % 500}/500 loss {2.0 / (1 + i / 300):.3f} lr {3e-4 * (1 - i / n):.1e}"
                for i in range(1, n + 1)]  # fmt: skip
    return [f"step={i} loss={1.0 / i:.6f}" for i in range(1, n + 1)]


def bytes_per_point(kind: str, n: int, burst: int, tmp: Path) -> tuple[float, float]:
    """(journal bytes per point, printed bytes per line) for n lines of `kind`, parsed by the
    supervisor's parser and journaled `burst` lines per write (1: a trainer slower than the reads)."""
    from remote_agent.metrics.lineparser import LineParser

    lines = realistic_lines(kind, n)
    parser = LineParser()
    path = tmp / f"{kind}-{burst}.jsonl"
    journal = JournalWriter(path)
    for start in range(0, n, burst):
        journal.append_many(
            [("metric", {"values": parser.parse(line)}) for line in lines[start : start + burst]]
        )
    journal.close()
    return path.stat().st_size / n, sum(len(line) + 1 for line in lines) / n


def cli(home: Path, *args: str, code: Path = ROOT) -> float:
    env = dict(os.environ, GPUDECK_HOME=str(home), PYTHONPATH=str(code))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tui", *args], env=env, cwd=str(home), check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - start


CPU_SCRIPT = """
import json, pathlib, shutil, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from remote_agent.jobstate import JobView
from remote_agent.storage.journal import JournalWriter
src = pathlib.Path(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    copy = pathlib.Path(tmp, "job")
    shutil.copytree(src, copy)
    (copy / "summary.cache.json").unlink(missing_ok=True)
    start = time.process_time()
    JobView("job", "0", copy).refresh()
    fold = time.process_time() - start
    writer = JournalWriter(pathlib.Path(tmp, "w.jsonl"))
    bursts = [[("metric", {"values": {"step": i, "loss": round(1.0 / i, 6)}}) for i in range(s, s + 2000)]
              for s in range(1, 200001, 2000)]
    start = time.process_time()
    for burst in bursts:
        writer.append_many(burst)
    print(json.dumps({"fold_s": fold, "write_us": (time.process_time() - start) / 200000 * 1e6}))
"""


def cpu_costs(code: Path, job_dir: Path) -> dict:
    """CPU seconds of the agent's first fold of the job's journal (no summary cache: a first
    listing, or the cache deleted) and CPU µs per point of the journal writer in bursts, with `code`."""
    done = subprocess.run([sys.executable, "-c", CPU_SCRIPT, str(code), str(job_dir)], check=True,
                          capture_output=True, text=True, cwd="/")  # fmt: skip
    return json.loads(done.stdout)


def output(home: Path, args: tuple[str, ...], code: Path = ROOT) -> str:
    """A digest of `gpudeck ARGS`'s stdout."""
    env = dict(os.environ, GPUDECK_HOME=str(home), PYTHONPATH=str(code))
    done = subprocess.run(
        [sys.executable, "-m", "tui", *args], env=env, cwd=str(home), check=True, capture_output=True
    )
    return hashlib.sha256(done.stdout).hexdigest()


def make_job_with(code: Path, agent: Path, job_id: str, name: str, points: int, workdir: str) -> None:
    """make_job with another tree's journal writer: that tree reads the journal its own writer wrote."""
    script = (f"import sys, importlib.util; sys.path.insert(0, {str(code)!r}); import remote_agent.storage.journal\n"
              f"spec = importlib.util.spec_from_file_location('bench_reading', {__file__!r})\n"
              f"module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
              f"module.make_job(module.Path({str(agent)!r}), {job_id!r}, {name!r}, {points}, {workdir!r})")  # fmt: skip
    subprocess.run([sys.executable, "-c", script], check=True, cwd="/")


def timed(home: Path, args: tuple[str, ...], rounds: int, against: Path | None,
          their_home: Path | None = None) -> tuple[float, float | None]:  # fmt: skip
    """Median seconds of `gpudeck ARGS` with this tree (and with `against`, interleaved; in
    `their_home` when given: a journal that tree's own writer wrote)."""
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(rounds):
        ours.append(cli(home, *args))
        if against is not None:
            theirs.append(cli(their_home or home, *args, code=against))
    return statistics.median(ours), (statistics.median(theirs) if theirs else None)


def versus(ours: float, theirs: float | None) -> str:
    return "" if theirs is None else f"; {theirs:.2f} s with --against, {ours / theirs:.2f}x"


def decode_all(journal: Path) -> float:
    start = time.perf_counter()
    with open(journal, "rb") as f:
        for line in f:
            json.loads(line)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--against", type=Path, default=None, help="another gpudeck tree to time side by side"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big_home, many_home, one_home = Path(tmp, "big"), Path(tmp, "many"), Path(tmp, "one")
        big = make_job(big_home / "local-agent", "20260101-000000-b16b16", "big", args.points, tmp)
        journal_bytes = (big / "events.jsonl").stat().st_size
        output_bytes = (big / "output.log").stat().st_size
        print(f"journal of {args.points:,} points: {journal_bytes / args.points:.1f} bytes/point; "
              f"the printed line: {output_bytes / args.points:.1f} bytes ({journal_bytes / output_bytes:.2f}x)")  # fmt: skip
        for kind, what in (
            ("flood", "step=N loss=X"),
            ("hf", "HF Trainer dict"),
            ("epoch", "epoch E step S/T loss X lr Y"),
        ):
            for burst, how in ((BURST, f"bursts of {BURST}"), (1, "one line per write")):
                journal_b, line_b = bytes_per_point(kind, 20000, burst, Path(tmp))
                print(f"  {what}, {how}: {journal_b:.1f} journal bytes/point for a {line_b:.1f}-byte line "
                      f"({journal_b / line_b:.2f}x)")  # fmt: skip
        cli(big_home, "ps", "--all")  # the first listing folds the journal and caches the fold
        old_home = Path(tmp, "big-against")
        if args.against is not None:
            make_job_with(
                args.against, old_home / "local-agent", "20260101-000000-b16b16", "big", args.points, tmp
            )
            old_journal = old_home / "local-agent" / "jobs" / "20260101-000000-b16b16" / "0" / "events.jsonl"
            print(
                f"the --against tree's journal of the same points: {old_journal.stat().st_size / args.points:.1f} bytes/point"
            )
            cli(old_home, "ps", "--all", code=args.against)
        if args.against is not None:  # the same output from both trees, each reading its own journal
            same = output(big_home, ("metrics", "--json", "big")) == output(
                old_home, ("metrics", "--json", "big"), args.against
            )
            print(f"metrics --json output byte-identical to the --against tree's: {same}")
        metrics, metrics_against = timed(
            big_home, ("metrics", "--json", "big"), args.rounds, args.against, old_home
        )
        decode = statistics.median(decode_all(big / "events.jsonl") for _ in range(args.rounds))
        print(f"metrics --json, {args.points:,} points: {metrics:.2f} s "
              f"(baseline, json.loads of every journal line: {decode:.2f} s, {metrics / decode:.1f}x"
              f"{versus(metrics, metrics_against)})")  # fmt: skip
        ours_cpu = cpu_costs(ROOT, big)
        line = f"first fold of that journal (a listing without its cache): {ours_cpu['fold_s']:.2f} s CPU; " \
               f"journal writer: {ours_cpu['write_us']:.2f} µs CPU per point in bursts of 2000"  # fmt: skip
        if args.against is not None:
            theirs_cpu = cpu_costs(args.against, old_journal.parent)
            line += (f" (--against, its own journal: {theirs_cpu['fold_s']:.2f} s, {ours_cpu['fold_s'] / theirs_cpu['fold_s']:.2f}x; "
                     f"{theirs_cpu['write_us']:.2f} µs, {ours_cpu['write_us'] / theirs_cpu['write_us']:.2f}x)")  # fmt: skip
        print(line)
        first = make_job(many_home / "local-agent", "20260101-000001-000000", "job0", 10, tmp)
        for i in range(1, args.jobs):
            job_id = f"20260101-{i // 60:04d}{i % 60:02d}-{i:06x}"
            copy = many_home / "local-agent" / "jobs" / job_id / "0"
            shutil.copytree(first, copy)
            spec = json.loads((copy / "spec.json").read_text())
            spec.update(id=job_id, name=f"job{i}")
            (copy / "spec.json").write_text(json.dumps(spec))
        make_job(one_home / "local-agent", "20260101-000001-000000", "job0", 10, tmp)
        cli(many_home, "ps", "--all")  # the first listing folds every journal and caches the fold
        if args.against is not None:
            cli(many_home, "ps", "--all", code=args.against)
        many, many_against = timed(many_home, ("ps", "--all"), args.rounds, args.against)
        one, one_against = timed(one_home, ("ps", "--all"), args.rounds, args.against)
        print(f"ps --all, {args.jobs} ended jobs: {many:.2f} s "
              f"(baseline, one job: {one:.2f} s, {many / one:.1f}x{versus(many, many_against)}; "
              f"one job{versus(one, one_against)})")  # fmt: skip


if __name__ == "__main__":
    main()
