"""Resize benchmark (issue 14): time from `gpudeck scale JOB +1` to the first training step at the
new world size, the reference trainer on `local` nodes (CPU, gloo), median of runs.

    python bench/bench_scale.py              # 3 runs of 2 → 3 nodes, restart mode
    python bench/bench_scale.py --runs 5 --nodes 1
    python bench/bench_scale.py --elastic    # the same job launched with --elastic 1:N+1

Elastic: the job keeps its id; `resumed` is its rank 0 resuming at the new world size, and `-1`
(back to N nodes, to the first step at N after it) is timed too.

Each run launches a fresh job under a private GPUDECK_HOME, waits for a few steps, then times:
  scale    the `gpudeck scale +1` command (pre-flight, graceful stop with checkpoint, relaunch)
  resumed  until the new rank 0 says it resumed from the checkpoint (torchrun + torch start, load)
  step     until its first step at the new world size (the goal: <= 15 s)
  cold     baseline: `gpudeck run --nodes N+1` of the same job to its first step (no stop, no resume)
The clock is this machine's wall clock; output is read from the job's output.log as it is written.
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

from scale_timeline import elastic_timeline, records, show, timeline

ROOT = Path(__file__).resolve().parent.parent
TINY = [
    "--synthetic-size",
    "64",
    "--batch-size",
    "12",
    "--image-size",
    "8",
    "--workers",
    "0",
    "--threads",
    "1",
    "--val-size",
    "8",
]


def cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    if r.returncode != 0:
        raise SystemExit(f"gpudeck {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def wait(what: str, check, timeout: float = 300.0) -> float:  # noqa: ANN001 - a predicate
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return time.perf_counter()
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def one_run(nodes: int, elastic: bool = False, code: Path = ROOT, with_cold: bool = True) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        (root / "user").mkdir()
        (root / "user" / ".profile").write_text("")  # jobs run under bash -l: a quiet, quick profile
        env = {
            **os.environ,
            "GPUDECK_HOME": str(root / "home"),
            "HOME": str(root / "user"),
            "PYTHONPATH": str(code) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        jobs = root / "home" / "local-agent" / "jobs"
        how = ["--elastic", f"1:{nodes + 1}"] if elastic else []
        job = cli(
            env,
            root,
            "run",
            "--grace",
            "30",
            "--nodes",
            str(nodes),
            *how,
            "--",
            sys.executable,
            "-m",
            "trainer",
            "--steps",
            "100000",
            *TINY,
            "--checkpoint-dir",
            str(root / "ck"),
        )
        new, t_minus, phases = "", 0.0, []
        try:
            wait(
                "step 3",
                lambda: any(
                    (p.get("step") or 0) >= 3 and "loss" in p
                    for p in records(jobs / job / "0" / "output.log")
                ),
            )
            t0_scale, t0_epoch = time.perf_counter(), time.time()
            new = cli(env, root, "scale", job, "+1")
            t_scale, t_return_epoch = time.perf_counter(), time.time()
            out = jobs / new / "0" / "output.log"
            t_resumed = wait(
                "resumed",
                lambda: any(
                    p.get("event") == "resumed" and p.get("world_size") == nodes + 1 for p in records(out)
                ),
            )
            t_step = wait(
                "a step at the new size",
                lambda: any(
                    p.get("world_size") == nodes + 1 and "loss" in p and "event" not in p
                    for p in records(out)
                ),
            )
            if elastic:  # and back: -1 to the first step at the old size after it
                new = ""  # the same job: killed once below
                last = max(
                    p["step"] for p in records(out) if p.get("world_size") == nodes + 1 and "loss" in p
                )
                t0_minus = time.perf_counter()
                cli(env, root, "scale", job, "-1")
                t_minus = wait(
                    "a step back at the old size",
                    lambda: any(
                        p.get("world_size") == nodes and "loss" in p and p.get("step", 0) > last
                        for p in records(out)
                    ),
                )
                t_minus -= t0_minus
        finally:
            for j in (new, job):
                if j:
                    subprocess.run(
                        [sys.executable, "-m", "tui", "kill", j],
                        capture_output=True,
                        env=env,
                        cwd=root,
                        timeout=120,
                    )
        # from the journals once the jobs are over (the one writer has caught up with the output)
        phases = (
            elastic_timeline(jobs, job, t0_epoch, t_return_epoch)
            if elastic
            else timeline(jobs, job, new, t0_epoch, t_return_epoch)
        )
        if not with_cold:
            return {
                "scale": t_scale - t0_scale,
                "resumed": t_resumed - t0_scale,
                "step": t_step - t0_scale,
                "cold": float("nan"),
                "minus": t_minus,
                "phases": phases,
            }
        # the baseline: a cold launch of the same job at the new size, to its first step (no stop,
        # no checkpoint): what any restart-mode resize pays at least
        t0 = time.perf_counter()
        cold = cli(
            env,
            root,
            "run",
            "--nodes",
            str(nodes + 1),
            "--",
            sys.executable,
            "-m",
            "trainer",
            "--steps",
            "100000",
            *TINY,
            "--checkpoint-dir",
            str(root / "ck-cold"),
        )
        try:
            t_cold = wait(
                "the cold launch's first step",
                lambda: any(
                    "loss" in p and "event" not in p for p in records(jobs / cold / "0" / "output.log")
                ),
            )
        finally:
            subprocess.run(
                [sys.executable, "-m", "tui", "kill", cold],
                capture_output=True,
                env=env,
                cwd=root,
                timeout=120,
            )
        return {
            "scale": t_scale - t0_scale,
            "resumed": t_resumed - t0_scale,
            "step": t_step - t0_scale,
            "cold": t_cold - t0,
            "minus": t_minus,
            "phases": phases,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=2, help="nodes before the +1 (default 2)")
    ap.add_argument(
        "--elastic", action="store_true", help="launch with --elastic 1:N+1 (nodes join and leave)"
    )
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-launch baseline (half the time)")
    ap.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="the gpudeck checkout to time (default: this one; e.g. a `git archive` of main)",
    )
    a = ap.parse_args()
    mode, goal = ("elastic", 5.0) if a.elastic else ("restart mode", 15.0)
    results = []
    for i in range(a.runs):
        r = one_run(a.nodes, a.elastic, a.code.resolve(), not a.no_cold)
        results.append(r)
        print(
            f"run {i + 1}: scale command {r['scale']:.1f} s, resumed {r['resumed']:.1f} s, "
            f"first step at {a.nodes + 1} nodes {r['step']:.1f} s; cold launch to a first step {r['cold']:.1f} s"
            + (f"; -1 to a step at {a.nodes} nodes {r['minus']:.1f} s" if a.elastic else ""),
            flush=True,
        )
        if r["phases"]:
            print(f"  timeline (s): {show(r['phases'])}  load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\n{a.nodes} → {a.nodes + 1} nodes, {mode}, median of {a.runs} (os.cpu_count()={os.cpu_count()}):")
    keys = [
        ("scale", "`gpudeck scale +1` returns"),
        ("resumed", "new rank 0 resumed"),
        ("step", "first step at the new size"),
        ("cold", "baseline: cold launch → step"),
    ]
    for key, label in keys + ([("minus", "-1 → step at the old size")] if a.elastic else []):
        vals = [r[key] for r in results]
        print(f"  {label:<28} {statistics.median(vals):6.1f} s  (min {min(vals):.1f}, max {max(vals):.1f})")
    names = [n for n, _ in results[0]["phases"]]
    if names and all([n for n, _ in r["phases"]] == names for r in results):
        print(
            "  timeline, median s: "
            + show([(n, statistics.median(dict(r["phases"])[n] for r in results)) for n in names])
        )
    step, cold = statistics.median(r["step"] for r in results), statistics.median(r["cold"] for r in results)
    print(
        f"  resize / cold launch: {step / cold:.2f}×;  goal first step <= {goal:g} s: {'met' if step <= goal else 'missed'}"
    )


if __name__ == "__main__":
    main()
