"""GPU check for a lent machine: what this project's CPU-only machines cannot test, in one run, one summary.

    python3 bench/gpu_check.py --out "$OUT/gpu_check.json"      # a few minutes; at most ~7.5 (its budget)
    python3 bench/gpu_check.py --quick                           # under 3 min
    python3 bench/gpu_check.py --parts nvml,oom_backoff          # some parts only

Parts (bench/gpucheck/): `nvml` the agent's own NVML probe (util, memory, temperature, power);
`torch` which torch and CUDA; `nvml_process` a CUDA process of ours in NVML's process list with its
memory (how the agent ties GPUs to jobs); `agent_job` jobs launched through gpudeck's agent on this
machine, their GPU samples in their journals; `container` a job in a container with the GPU (docker
or podman + the NVIDIA toolkit, a local image: nothing is pulled); `trainer_resnet50` the reference
trainer, ResNet-50, bf16 autocast, its images/s beside NVIDIA's A100 figure; `oom_backoff` a real
CUDA out-of-memory and the trainer's backoff; `bare_resnet50` the GPU's ResNet-50 rate without data
loading. Each part has its own time limit and the whole run a budget; nothing waits forever.

No GPU here: it says so and exits 0 within a second. Exit 1 when a part failed (a skip is no failure).
Installs nothing. Without nvidia-ml-py on the machine, put its pynvml.py in a folder of the working
tree and pass `--pynvml-dir` (or $GPUDECK_PYNVML_DIR).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse(argv: list[str] | None, names: tuple[str, ...]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="shorter runs of every part, under 3 minutes in all")
    p.add_argument("--out", metavar="PATH", help="also write the summary as JSON there")
    p.add_argument("--parts", default=",".join(names), help=f"comma-separated, of: {', '.join(names)}")
    p.add_argument(
        "--budget", type=float, default=None, help="seconds for all parts (default 420, quick 160)"
    )
    p.add_argument(
        "--oom-headroom-mib", type=int, default=10240, help="GPU memory left free for the OOM part"
    )
    p.add_argument("--container-image", default=None, help="a local image for the container part")
    p.add_argument("--pynvml-dir", default=os.environ.get("GPUDECK_PYNVML_DIR"), help="where pynvml.py is")
    a = p.parse_args(argv)
    a.parts = [n.strip() for n in a.parts.split(",") if n.strip()]
    unknown = sorted(set(a.parts) - set(names))
    if unknown:
        p.error(f"unknown part(s): {', '.join(unknown)}")
    if a.budget is None:
        a.budget = 160.0 if a.quick else 420.0
    return a


def import_path(path: str) -> None:
    """A folder for this process and every child (agent, jobs, trainer): this repository, pynvml's."""
    sys.path.insert(0, path)
    os.environ["PYTHONPATH"] = os.pathsep.join([path] + [p for p in [os.environ.get("PYTHONPATH")] if p])


def main(argv: list[str] | None = None) -> int:
    import_path(str(ROOT))
    from bench.gpucheck import detect
    from bench.gpucheck.parts import NAMES, PARTS
    from bench.gpucheck.result import PartResult, exit_code, report, table, write_json

    a = parse(argv, NAMES)
    if a.pynvml_dir:
        import_path(os.path.abspath(a.pynvml_dir))  # before the first NVML call imports pynvml
    started = time.monotonic()
    facts = detect.machine()
    why_not = detect.no_gpu_reason(facts)
    wanted = {*a.parts, *(["torch"] if any(p.needs_cuda for p in PARTS if p.name in a.parts) else [])}
    selected = [p for p in PARTS if p.name in wanted]
    results: list[PartResult] = []

    def save() -> None:
        if a.out:
            about = {"quick": a.quick, "budget_s": a.budget, "seconds": round(time.monotonic() - started, 1)}
            write_json(a.out, report(results, **about))

    if why_not:
        print(f"gpu_check: no GPU here ({why_not}): nothing to check", file=sys.stderr)
        results.append(PartResult("gpu", "skip", "", f"no GPU: {why_not}", details=facts))
        results += [PartResult(p.name, "skip", reason="no GPU") for p in selected]
    else:
        results.append(PartResult("gpu", "ok", detect.gpu_line(facts), details=facts))
        run_parts(selected, a, facts, started + a.budget, results, save)
    save()
    print(table(results))
    return exit_code(results)


def run_parts(
    selected: list, a: argparse.Namespace, facts: dict, budget_end: float, results: list, save
) -> None:
    """Each part in turn, its progress on stderr and the JSON rewritten after it (a cut run keeps it)."""
    from bench.gpucheck.context import Context
    from bench.gpucheck.runner import run_part

    options = {"oom_headroom_mib": a.oom_headroom_mib, "container_image": a.container_image}
    with tempfile.TemporaryDirectory(prefix="gpu_check-", ignore_cleanup_errors=True) as tmp:
        ctx = Context(quick=a.quick, tmp=Path(tmp), facts=facts, options=options)
        for part in selected:
            print(f"gpu_check: {part.name} ...", file=sys.stderr, flush=True)
            r = run_part(part, ctx, budget_end)
            results.append(r)
            print(f"gpu_check: {part.name} {r.status} {r.number} {r.reason}", file=sys.stderr, flush=True)
            save()


if __name__ == "__main__":
    sys.exit(main())
