"""Slurm hosts (issue 30): what a `jobs` listing on a login node costs, side by side in one run.

    python bench/bench_slurm.py [--jobs 20] [--nodes 2] [--rounds 15]

Starts the tests' private 3-node Slurm cluster (tests/support/slurm: needs root, slurm-wlm, munge),
submits JOBS jobs of NODES nodes each that stay pending (more nodes than the cluster has, so the queue
does not change under the measure), then times, median of ROUNDS:
  listing   -- the agent's `jobs` listing (JobTable.list): one squeue for all of them;
  per-job   -- the baseline gpudeck avoids: one `squeue -j ID` per job;
and, once, submit → RUNNING of a 1-node job as `jobs` reports it (sbatch + batch_sched_delay=0 + srun
+ the supervisor's first records).
"""

from __future__ import annotations

import argparse
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

from remote_agent.names import new_job_id  # noqa: E402
from remote_agent.serving.jobs import JobTable  # noqa: E402
from tests.support.slurm import RECIPE, _free_ports  # noqa: E402


def median_ms(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gpudeck-slurm-bench-"))
    os.chmod(base, 0o755)
    env = {**os.environ, "BASE": str(base), "PORT0": str(_free_ports(4))}
    subprocess.run(["bash", str(RECIPE / "slurm-up.sh")], env=env, check=True, capture_output=True)
    os.environ["SLURM_CONF"] = str(base / "etc" / "slurm.conf")
    work = base / "work"
    work.mkdir()
    try:
        table = JobTable(base / "agent")

        def spec(nodes: int, argv: list[str]) -> dict:  # type: ignore[type-arg]
            return {
                "id": new_job_id(),
                "name": "b",
                "argv": argv,
                "workdir": str(work),
                "placement": {"nodes": nodes},
            }

        ids = [table.launch(spec(4, ["true"]))["slurm"]["job_id"] for _ in range(args.jobs)]
        listing = median_ms(table.list, args.rounds)
        per_job = median_ms(
            lambda: [
                subprocess.run(["squeue", "-h", "-j", i, "-o", "%T|%r"], capture_output=True) for i in ids
            ],
            args.rounds,
        )
        print(
            f"{args.jobs} pending jobs x 4 nodes: jobs listing (one squeue) {listing:.0f} ms; "
            f"one squeue per job (baseline) {per_job:.0f} ms  [median of {args.rounds}]"
        )
        subprocess.run(["scancel", *ids], check=True)
        start = time.perf_counter()
        job = spec(1, ["sleep", "30"])
        table.launch(job)
        while not any(j["id"] == job["id"] and j["state"] == "running" for j in table.list()):
            time.sleep(0.02)
        print(
            f"submit -> running (1 node, as `jobs` reports it): {(time.perf_counter() - start) * 1000:.0f} ms"
        )
        table.end(job["id"], "0", "kill", None)
    finally:
        subprocess.run(["bash", str(RECIPE / "slurm-down.sh")], env=env, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
