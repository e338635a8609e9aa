"""CPU that `serve` spends per followed line, by thread: what the `logs -f` push competes for.

A real `python -m remote_agent serve` (a local pipe, no SSH) follows a job that prints --lines
lines every --interval seconds, each a JSON metric (so the journal grows with every line, as with
a trainer). Before and after, each serve thread's time on CPU comes from
/proc/PID/task/TID/schedstat (first field, ns); the result is µs per line, all threads and the
busiest two (Linux only).
Run it from two trees (PYTHONPATH=TREE python TREE/bench/bench_follow_cpu.py) to compare them.
Also (issue 33) the job's supervisor per line, and in the same round the baseline without gpudeck:
the same script as a plain process writing a file, followed by `tail -F` (its CPU per line), so
gpudeck's side (supervisor + serve) is set against what a bare follower costs.

    python bench/bench_follow_cpu.py [--lines 300] [--interval 0.02] [--rounds 3]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRINTS = (
    "import json, sys, time\nfor i in range({n}):\n"
    "    print(json.dumps({{'step': i, 'loss': 1.0 / (i + 1)}}), flush=True)\n    time.sleep({interval})\n"
)


def thread_cpu_ns(pid: int) -> dict[str, int]:
    """ns on CPU so far, by thread id (Python does not name its OS threads)."""
    out: dict[str, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return out


def one_round(agent_dir: Path, lines: int, interval: float) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    wrap = os.environ.get("BENCH_WRAP", "").split()  # e.g. "strace -f -o FILE": see each line's syscalls
    serve = subprocess.Popen(
        [*wrap, sys.executable, "-m", "remote_agent", "serve", "--agent-dir", str(agent_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert serve.stdin is not None and serve.stdout is not None

    def request(rid: int, op: str, **args: object) -> dict:
        serve.stdin.write(json.dumps({"id": rid, "op": op, **args}).encode() + b"\n")
        serve.stdin.flush()
        for raw in serve.stdout:
            obj = _parse(raw)
            if obj.get("id") == rid:
                return obj
        raise RuntimeError("serve ended")

    try:
        job_id = _job_id()
        spec = {
            "id": job_id,
            "name": "bench-cpu",
            "node": "0",
            "workdir": str(agent_dir),
            "argv": [sys.executable, "-c", PRINTS.format(n=lines, interval=interval)],
        }
        request(2, "launch", spec=spec)
        request(3, "follow", job=job_id, node="0", offset=0)
        before: dict[str, int] = {}
        counted = 0
        supervisor = _supervisor_pid(agent_dir, job_id)
        sup_before = sup_last = 0
        for raw in serve.stdout:
            push = _parse(raw)
            if push.get("push") == "output_end":
                break
            if push.get("push") != "output":
                continue
            sup_now = _process_cpu_ns(supervisor)
            if sup_now:
                sup_last = sup_now  # it exits at the job's end: its last reading counts
            if before:  # from the first line on: the hub thread's start-up is not a line's cost
                counted += base64.b64decode(push["data"]).count(b"\n")
            else:
                before = thread_cpu_ns(serve.pid)
                sup_before = sup_now
        after = thread_cpu_ns(serve.pid)
        lines = max(counted, 1)
    finally:
        serve.stdin.close()
        serve.wait(30)
    spent = sorted(((after[tid] - before.get(tid, 0)) / lines / 1000 for tid in after), reverse=True)
    return {
        "all threads": sum(spent),
        "busiest thread": spent[0],
        "second busiest": spent[1] if len(spent) > 1 else 0.0,
        "supervisor": (sup_last - sup_before) / lines / 1000,
        "tail -F (no gpudeck)": plain_tail_round(agent_dir, lines if lines > 1 else 1, interval),
    }


def plain_tail_round(agent_dir: Path, lines: int, interval: float) -> float:
    """The baseline: the same prints from a plain process into a file, `tail -F` reading it; tail's
    CPU µs per line, from its first line to its last."""
    path = agent_dir / f"plain-{os.getpid()}-{time.monotonic_ns()}.log"
    path.touch()
    tail = subprocess.Popen(["tail", "-n", "+1", "-F", str(path)], stdout=subprocess.PIPE)
    assert tail.stdout is not None
    with open(path, "ab") as out:
        writer = subprocess.Popen(
            [sys.executable, "-c", PRINTS.format(n=lines + 1, interval=interval)], stdout=out
        )
    tail.stdout.readline()  # the first line: tail's start-up is not a line's cost
    start = _process_cpu_ns(tail.pid)
    for _ in range(lines):
        tail.stdout.readline()
    end = _process_cpu_ns(tail.pid)
    writer.wait(60)
    tail.kill()
    tail.wait(30)
    return (end - start) / lines / 1000


def _process_cpu_ns(pid: int) -> int:
    """ns on CPU of all of a process's threads (0 once it is gone)."""
    return sum(thread_cpu_ns(pid).values()) if pid and os.path.isdir(f"/proc/{pid}") else 0


def _supervisor_pid(agent_dir: Path, job_id: str) -> int:
    journal = agent_dir / "jobs" / job_id / "0" / "events.jsonl"
    for _ in range(1000):
        try:
            first = journal.read_bytes().split(b"\n", 1)[0]
            return int(json.loads(first)["supervisor_pid"])
        except (OSError, ValueError, KeyError):
            time.sleep(0.01)
    return 0


def _parse(raw: bytes) -> dict:
    try:
        obj = json.loads(raw)
    except ValueError:
        return {}  # the hello marker
    return obj if isinstance(obj, dict) else {}


def _job_id() -> str:
    sys.path.insert(0, str(ROOT))
    from remote_agent.names import new_job_id

    return new_job_id()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            rounds.append(one_round(Path(tmp), args.lines, args.interval))
    names = ["all threads", "busiest thread", "second busiest", "supervisor", "tail -F (no gpudeck)"]
    print(f"serve's CPU per followed line, median of {args.rounds} rounds of {args.lines} lines ({ROOT})")
    for name in names:
        print(f"  {name:<16} {statistics.median(r[name] for r in rounds):8.1f} µs/line")
    ours = statistics.median(r["all threads"] + r["supervisor"] for r in rounds)
    bare = statistics.median(r["tail -F (no gpudeck)"] for r in rounds)
    print(
        f"  gpudeck (serve + supervisor) {ours:.1f} µs/line vs tail -F {bare:.1f}: {ours / max(bare, 0.001):.1f}×"
    )


if __name__ == "__main__":
    main()
