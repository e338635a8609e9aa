"""`gpudeck logs -f` over loopback SSH against `ssh HOST tail -f` of the same file, side by side.

One private sshd on 127.0.0.1 (set up as bench/bench_ssh.py does). A job prints one line every
--interval seconds carrying the time it printed; `gpudeck logs -f JOB` (a real CLI process:
paramiko exec channel → serve's `follow` push → the CLI's stdout) and OpenSSH's
`ssh … tail -F output.log` read the same job at the same time, and each records print → line on
its stdout. Medians over --rounds of each round's p50/p99; the ratio is gpudeck / baseline
(also the median of each round's own p50 ratio: under load it moves less).

`--plain-writer` (issue 33): the baseline follows a writer without gpudeck instead — the same
script started as a plain process beside the job, its stdout a plain file, released by the same go
file — so the supervisor's own cost per line is charged to gpudeck alone (`ssh tail -F` of the
job's own output.log shares the supervisor's load with it).

    python bench/bench_logs.py [--lines 300] [--interval 0.02] [--rounds 3] [--plain-writer]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_ssh import pct, ssh_tail  # noqa: E402
from bench.loopback import loopback_host  # noqa: E402
from remote_agent.names import new_job_id  # noqa: E402
from tests.support.cleanup import kill_all_jobs  # noqa: E402

# Prints "ready" and waits for the go file, so both readers are attached before the first tick.
TICKS = (
    "import json, os, sys, time\nprint('ready', flush=True)\n"
    "while not os.path.exists({go!r}): time.sleep(0.005)\nfor i in range(1, {n} + 1):\n"
    "    print(json.dumps({{'step': i, 'sent': time.time()}}), flush=True)\n    time.sleep({interval})\n"
)


def read_latencies(stream, n: int, ready: threading.Event, into: list[float]) -> None:
    """Arrival - print time of each ticked line on a reader's stdout, until line n."""
    for line in stream:
        now = time.time()
        if line.strip() == b"ready":
            ready.set()
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # the remote .bashrc's junk
        if isinstance(obj, dict) and "sent" in obj:
            into.append(now - obj["sent"])
            if obj["step"] == n:
                return


def latency_round(
    client, server, known: Path, agent_dir: Path, n: int, interval: float, plain: bool = False
) -> tuple[list[float], list[float]]:
    job_id = new_job_id()
    go = agent_dir / f"go-{job_id}"
    spec = {
        "id": job_id,
        "name": "bench-logs",
        "node": "0",
        "workdir": str(agent_dir),
        "argv": [sys.executable, "-c", TICKS.format(n=n, interval=interval, go=str(go))],
    }
    client.request("launch", timeout=60, spec=spec)
    ours_proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    followed = agent_dir / "jobs" / job_id / "0" / "output.log"
    writer = None
    if plain:  # the same ticks from a process gpudeck never saw, into a file of its own
        followed = agent_dir / f"plain-{job_id}.log"
        with open(followed, "wb") as out:
            writer = subprocess.Popen(
                [sys.executable, "-c", TICKS.format(n=n, interval=interval, go=str(go))],
                stdout=out,
                stderr=subprocess.DEVNULL,
                cwd=agent_dir,
            )
    base_proc = ssh_tail(server, known, followed)
    ours: list[float] = []
    base: list[float] = []
    readers = []
    for proc, into in ((ours_proc, ours), (base_proc, base)):
        ready = threading.Event()
        t = threading.Thread(target=read_latencies, args=(proc.stdout, n, ready, into), daemon=True)
        t.start()
        readers.append((t, ready))
    for _, ready in readers:
        if not ready.wait(60):
            raise SystemExit("a reader never showed the job's first line")
    time.sleep(0.5)
    go.touch()
    for t, _ in readers:
        t.join(timeout=n * interval + 60)
    code = ours_proc.wait(timeout=60)
    base_proc.kill()
    if writer is not None:
        writer.wait(timeout=60)
    if code != 0 or len(ours) != n or len(base) != n:
        raise SystemExit(
            f"round incomplete: gpudeck exit {code}, lines {len(ours)}/{n}, ssh tail lines {len(base)}/{n}"
        )
    return ours, base


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--plain-writer", action="store_true", help="the baseline tails a writer without gpudeck")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    box = loopback_host(root)
    server, known, agent_dir = box.server, box.known, box.agent_dir

    from tui.session import Session

    session = Session()
    rows_ours, rows_base = [], []
    try:
        client = session.client("box")
        for _ in range(args.rounds):
            ours, base = latency_round(
                client, server, known, agent_dir, args.lines, args.interval, args.plain_writer
            )
            rows_ours.append((pct(ours, 50), pct(ours, 99)))
            rows_base.append((pct(base, 50), pct(base, 99)))
            print(
                f"round {len(rows_ours)}: p50 {rows_ours[-1][0] * 1000:.2f} vs {rows_base[-1][0] * 1000:.2f} ms "
                f"({rows_ours[-1][0] / rows_base[-1][0]:.2f}×)",
                flush=True,
            )
    finally:
        session.close()
        server.stop()
        kill_all_jobs(agent_dir)  # this run's jobs only, by pid
        shutil.rmtree(root, ignore_errors=True)

    print(
        f"loopback SSH, {args.rounds} rounds (medians of each round's percentiles), "
        f"{args.lines} lines every {args.interval * 1000:g} ms: print → line on the reader's stdout"
    )
    baseline = (
        "ssh tail -f (a writer without gpudeck)"
        if args.plain_writer
        else "ssh tail -f (the job's output.log)"
    )
    print(f"baseline: {baseline}")
    print(f"{'':22}{'gpudeck logs -f':>16}{'ssh tail -f':>14}{'ratio':>8}")
    for label, i in (("latency p50 (ms)", 0), ("latency p99 (ms)", 1)):
        o = statistics.median(r[i] for r in rows_ours) * 1000
        b = statistics.median(r[i] for r in rows_base) * 1000
        print(f"{label:22}{o:16.2f}{b:14.2f}{o / b:8.2f}")
    # Both readers of a round share its load: the median of the rounds' own ratios is the steadier figure.
    paired = statistics.median(o[0] / b[0] for o, b in zip(rows_ours, rows_base, strict=True))
    print(f"p50 ratio, median of the rounds' own ratios: {paired:.2f}")


if __name__ == "__main__":
    main()
