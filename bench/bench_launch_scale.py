"""Issue 33, launch and stop independent of the job count: the time to launch one `sleep` job and to
stop it, with 1 and then with N (default 200) idle `sleep 600` jobs already on the local host, in one
run (medians). Two levels: the agent's own ops (a `launch` / `stop` request on one open local agent
connection, answer to answer) and the CLI a user runs (`gpudeck run -- sleep 600`, `gpudeck stop ID`
in a fresh interpreter). Goal: N jobs within 20 % of 1 job. The serve process's CPU per op is shown
too (utime + stime over the rounds), a steadier figure than wall time on a loaded machine.

    python bench/bench_launch_scale.py [--jobs 200] [--rounds 7] [--no-cli] [--against DIR] [--interleave]

`--against DIR`: the same with another checkout's agent and CLI (`git worktree add --detach DIR
<commit>`), in the same run: the baseline. Run it from a cwd outside the repo.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.jobs import launch, wait_state  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
REPO = str(Path(__file__).resolve().parent.parent)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def serve_pid(client: AgentClient) -> int:
    proc: Any = getattr(client.transport, "_proc", None) or getattr(client.transport, "proc", None)
    return int(proc.pid) if proc is not None else 0


def agent_round(client: AgentClient, home: Path) -> tuple[float, float]:
    """(launch s, stop s) of one `sleep 600` job through the agent's ops."""
    t0 = time.perf_counter()
    obj = launch(client, home, ["sleep", "600"], name="probe")
    t1 = time.perf_counter()
    if obj["state"] != "running":
        obj = wait_state(client, obj["id"], {"running"})
    t2 = time.perf_counter()
    client.request("stop", timeout=60, job=obj["id"], node="0", grace=5.0)
    t3 = time.perf_counter()
    client.request("rm", timeout=60, job=obj["id"], node="0")
    return t1 - t0, t3 - t2


def cli(home: Path, *args: str) -> tuple[float, str]:
    env = dict(os.environ, GPUDECK_HOME=str(home))
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tui", *args], cwd=home, env=env, capture_output=True, text=True, timeout=120
    )
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"gpudeck {' '.join(args)}: {done.stderr.strip()}")
    return elapsed, done.stdout.strip()


def cli_round(home: Path) -> tuple[float, float]:
    took_run, job_id = cli(home, "run", "--name", "probe", "--", "sleep", "600")
    took_stop, _ = cli(home, "stop", job_id.splitlines()[-1], "--grace", "5")
    cli(home, "rm", job_id.splitlines()[-1])
    return took_run, took_stop


def rounds_of(client: AgentClient, home: Path, with_cli: bool) -> dict[str, float]:
    """One round on one home: agent launch and stop, serve CPU, and the CLI's run and stop."""
    pid = serve_pid(client)
    cpu0 = cpu_seconds(pid) if pid else 0.0
    launched, stopped = agent_round(client, home)
    row = {
        "launch": launched,
        "stop": stopped,
        "serve_cpu": (cpu_seconds(pid) - cpu0) if pid else float("nan"),
    }
    if with_cli:
        row["cli_run"], row["cli_stop"] = cli_round(home)
    return row


def open_home(tree: str, idle: int) -> tuple[Path, AgentClient, list[str]]:
    """A fresh home whose local agent runs `idle` idle `sleep 600` jobs of `tree`'s code."""
    home = Path(tempfile.mkdtemp(prefix="bench-launch-scale-"))
    os.environ["GPUDECK_HOME"] = str(home)
    os.environ["PYTHONPATH"] = tree  # the agent, its supervisors and the CLI run this checkout's code
    os.chdir(home)  # `python -m` looks in the cwd first
    client = AgentClient(LocalTransport(home / "local-agent"))
    client.connect()
    ids = [launch(client, home, ["sleep", "600"], name=f"idle-{i}")["id"] for i in range(idle)]
    return home, client, ids


def scale(
    tree: str, jobs: int, rounds: int, with_cli: bool, interleave: bool
) -> tuple[dict[str, float], dict[str, float]]:
    """(beside 1 job, beside `jobs` jobs) of `tree`'s code. By default one home: its rounds beside 1
    job, then beside `jobs` (the host's processes grow too). `interleave`: two homes, their rounds
    alternating, so both meet the same load (this machine's moves by 2x within minutes) — but the
    1-job home then shares the host with the other's processes: only the agent dir's job count
    differs."""
    homes = [open_home(tree, 1)] + ([open_home(tree, jobs)] if interleave else [])
    rows: list[list[dict[str, float]]] = [[], []]
    try:
        if interleave:
            for _ in range(rounds):
                for i, (home, client, _ids) in enumerate(homes):
                    os.environ["GPUDECK_HOME"] = str(home)
                    os.chdir(home)
                    rows[i].append(rounds_of(client, home, with_cli))
        else:
            home, client, ids = homes[0]
            rows[0] = [rounds_of(client, home, with_cli) for _ in range(rounds)]
            ids.extend(launch(client, home, ["sleep", "600"], name=f"idle-{i}")["id"] for i in range(1, jobs))
            rows[1] = [rounds_of(client, home, with_cli) for _ in range(rounds)]
    finally:
        for _home, client, ids in homes:
            for job_id in ids:
                client.request("kill", timeout=60, job=job_id, node="0")
            client.close()
    one, many = ({k: statistics.median(r[k] for r in got) for k in got[0]} for got in rows)
    return one, many


LABELS = {
    "launch": "agent launch (s)",
    "stop": "agent stop (s)",
    "serve_cpu": "serve CPU per round (s)",
    "cli_run": "gpudeck run (s)",
    "cli_stop": "gpudeck stop (s)",
}


def report(title: str, jobs: int, one: dict[str, float], many: dict[str, float]) -> None:
    print(f"{title:24}{'1 job':>10}{f'{jobs} jobs':>12}{'ratio':>8}")
    for key, label in LABELS.items():
        if key in one:
            print(f"{label:24}{one[key]:10.3f}{many[key]:12.3f}{many[key] / one[key]:8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-cli", action="store_true", help="only the agent's ops")
    ap.add_argument("--against", metavar="DIR", help="another checkout, measured in the same run")
    ap.add_argument("--interleave", action="store_true", help="1-job and N-job homes round by round")
    args = ap.parse_args()
    trees = [("this checkout", REPO)] + (
        [("against", str(Path(args.against).resolve()))] if args.against else []
    )
    results = [
        (title, scale(tree, args.jobs, args.rounds, not args.no_cli, args.interleave))
        for title, tree in trees
    ]
    print(f"load {os.getloadavg()[0]:.1f}; medians of {args.rounds} rounds; ratio = {args.jobs} jobs / 1 job")
    for title, (one, many) in results:
        report(title, args.jobs, one, many)


if __name__ == "__main__":
    main()
