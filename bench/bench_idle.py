"""Issue 33, supervisors that cost nothing idle: N jobs that print nothing (`sleep 600`) on the local
agent, and what their supervisors cost while the jobs sleep — CPU (utime + stime from /proc over a
window, as % of one core) and memory (RSS and PSS per supervisor). `--against DIR` runs the same
with another checkout's agent (e.g. `git worktree add /tmp/base <commit>`), in the same run: the
baseline. The sleeps themselves cost 0 % and ~1 MiB each.

    python bench/bench_idle.py [--jobs 50] [--seconds 20] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.jobs import launch, wait_state  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in KiB."""
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss, pss


def keeper_pid(agent_dir: Path) -> int:
    """The agent dir's keeper (one per host: it looks at every job each second), or 0."""
    needle = f"keeper\0{agent_dir}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
    return 0


def measure(tree: str, jobs: int, seconds: float) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="bench-idle-"))
    os.environ["PYTHONPATH"] = tree  # the agent and its supervisors run this checkout's code
    os.chdir(home)  # `python -m` looks in the cwd first
    client = AgentClient(LocalTransport(home / "agent"))
    client.connect()
    try:
        ids = [launch(client, home, ["sleep", "600"], name=f"idle-{i}")["id"] for i in range(jobs)]
        objs = [wait_state(client, job_id, {"running"}, timeout=120) for job_id in ids]
        pids = [int(o["supervisor_pid"]) for o in objs]
        time.sleep(2.0)  # past their start
        keeper = keeper_pid(home / "agent")
        pids.append(keeper)  # last: counted apart
        before, t0 = [cpu_ticks(p) if p else 0 for p in pids], time.monotonic()
        time.sleep(seconds)
        after, t1 = [cpu_ticks(p) if p else 0 for p in pids], time.monotonic()
        pids.pop()
        mem = [memory_kib(p) for p in pids]
        for job_id in ids:
            client.request("kill", job=job_id, node="0")
        for job_id in ids:
            wait_state(client, job_id, {"killed", "exited", "failed", "stopped"}, timeout=120)
    finally:
        client.close()
    used = [(a - b) / TICKS / (t1 - t0) * 100 for a, b in zip(after, before, strict=True)]
    return {
        "cpu_percent": sum(used[:-1]),
        "keeper_percent": used[-1],
        "rss_mib": statistics.median(m[0] for m in mem) / 1024,
        "pss_mib": statistics.median(m[1] for m in mem) / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--against", metavar="DIR", help="another checkout, measured in the same run")
    args = ap.parse_args()
    here = str(Path(__file__).resolve().parent.parent)
    trees = {"this checkout": here} | ({"against": os.path.abspath(args.against)} if args.against else {})
    print(
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.jobs} idle jobs, {args.seconds:g} s window"
    )
    for name, tree in trees.items():
        got = measure(tree, args.jobs, args.seconds)
        print(
            f"  {name:<14} supervisors: {got['cpu_percent']:5.1f} % of a core in all "
            f"({got['cpu_percent'] / args.jobs:.3f} % each); per supervisor RSS {got['rss_mib']:.1f} MiB, "
            f"PSS {got['pss_mib']:.1f} MiB; the host's keeper {got['keeper_percent']:.2f} % of a core"
        )


if __name__ == "__main__":
    main()
