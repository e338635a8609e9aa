"""The `procs` op's own cost (what the process view asks every 2 s), beside a `jobs` round trip
on the same agent: a job whose command starts N sleeping children, asked R times with a tiny CPU
interval so the figure is the /proc walk (job tree via the marker and the supervisor's
descendants, two stat readings, statm, cmdline per process) plus the answer's size.

    python bench/bench_procs.py [--children 64] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remote_agent.names import new_job_id  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402

INTERVAL = 0.001  # the CPU-% window, near zero: what is left is the op's work


def median_ms(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    tree = (
        f"import subprocess, sys, time\nkids = [subprocess.Popen([sys.executable, '-c', 'import time; "
        f"time.sleep(600)']) for _ in range({args.children})]\ntime.sleep(600)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        client = AgentClient(LocalTransport(Path(tmp) / "agent"))
        client.connect()
        job_id = new_job_id()
        client.request(
            "launch",
            timeout=60,
            spec={"id": job_id, "name": "bench-procs", "workdir": tmp, "argv": [sys.executable, "-c", tree]},
        )
        try:
            want = args.children + 2  # the children, the command, the supervisor
            deadline = time.monotonic() + 60
            while len(client.request("procs", job=job_id, interval=INTERVAL)["processes"]) < want:
                if time.monotonic() > deadline:
                    raise SystemExit("the job's children did not all start")
                time.sleep(0.1)
            answer = client.request("procs", job=job_id, interval=INTERVAL)
            procs = median_ms(lambda: client.request("procs", job=job_id, interval=INTERVAL), args.rounds)
            jobs = median_ms(lambda: client.request("jobs"), args.rounds)
        finally:
            client.request("kill", job=job_id, timeout=60)
            client.close()
    size = len(json.dumps(answer))
    print(
        f"procs of a job of {want} processes: median {procs:.1f} ms ({procs / want:.2f} ms a process, "
        f"answer {size / 1024:.1f} KiB); a `jobs` round trip on the same agent: {jobs:.1f} ms; "
        f"ratio {procs / jobs:.1f}×  (median of {args.rounds})"
    )


if __name__ == "__main__":
    main()
