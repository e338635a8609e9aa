"""The frameworks check: real frameworks run under `gpudeck run`, their loss curve as gpudeck read
it (`gpudeck metrics --json`) against the framework's own record of it.

Setup (once; never into gpudeck's own venv):

    python3 -m venv --system-site-packages /work/fwvenv       # torch comes from the base python
    /work/fwvenv/bin/pip install transformers lightning keras xgboost lightgbm \\
        stable-baselines3 gymnasium scikit-learn accelerate pandas

Run (each case seconds to a minute on 2 cores; no downloads, tiny models and data made locally):

    python bench/frameworks/run.py --python /work/fwvenv/bin/python [--pty both] [--only NAME...]

Each case (bench/frameworks/cases/) writes `record.json`: the framework's own (step or epoch,
loss) list (HF log_history, Lightning CSVLogger, Keras History, XGBoost evals_result, LightGBM
record_evaluation, SB3 progress.csv, sklearn loss_curve_, the script's own list). Then, per
framework, for the record's points (its axis: step or epoch):

- **exact**: gpudeck has a `loss` point at that step (epoch) whose value matches the record's
  within print rounding (3 significant digits: the coarsest any of these prints; |a-b| <=
  max(5e-4, 5e-3*|b|)). On the epoch axis the point that counts is the last one of the epoch
  (Keras' bar shows the running mean within the epoch and settles on History's value).
- **no-step**: not exact, but a `loss` point without that axis has the record's value.
- **missing**: neither.
- **false** (counted over gpudeck's points, step axis): a `loss` point at a recorded step whose
  value is not the record's there. On the epoch axis: an epoch whose last point is not the
  record's value.
- **extra**: `loss` points at steps the framework did not record (a bar's frames between logged
  steps): shown, not judged.
- **stepless**: `loss` points without the record's axis at all, shown or not (a Lightning job's
  bar values that its logger files give at their steps are left out: a series drawn twice would
  show here).
- **never printed** (Lightning's Rich bar, where the bytes can tell: rich_frames.py): recorded
  steps whose loss no frame of output.log shows at all. They are counted in `missing` too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich_frames import never_drawn

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases"


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # after the venv's python
    record: str  # what the framework's own record is


def cases(port: int) -> list[Case]:
    dist = ("-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(port))
    return [
        Case("hf-trainer", ("hf_trainer.py",), "Trainer.state.log_history"),
        Case("lightning-tqdm", ("lightning_bar.py", "{out}", "tqdm"), "CSVLogger metrics.csv"),
        Case("lightning-rich", ("lightning_bar.py", "{out}", "rich"), "CSVLogger metrics.csv"),
        Case("lightning-rich-30ms", ("lightning_bar.py", "{out}", "rich", "0.03"), "CSVLogger metrics.csv"),
        Case(
            "lightning-rich-csv", ("lightning_bar.py", "{out}", "rich", "0", "csv"), "CSVLogger metrics.csv"
        ),
        Case("keras-v1", ("keras_fit.py", "{out}", "1"), "History"),
        Case("keras-v2", ("keras_fit.py", "{out}", "2"), "History"),
        Case("xgboost", ("xgboost_rounds.py",), "evals_result"),
        Case("lightgbm", ("lightgbm_rounds.py",), "record_evaluation"),
        Case("sb3-ppo", ("sb3_ppo.py", "{out}"), "progress.csv"),
        Case("sklearn-mlp", ("sklearn_mlp.py",), "loss_curve_"),
        Case("torch-logging", ("torch_logging.py",), "its own list"),
        Case("accelerate-tqdm", ("accelerate_tqdm.py",), "its own list"),
        Case("torchrun-2ranks", (*dist, "torchrun_ranks.py"), "rank 0's own list"),
    ]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= max(5e-4, 5e-3 * abs(b))


def judge(axis: str, record: list[list[float]], points: list[dict[str, Any]]) -> dict[str, int]:
    losses = [p for p in points if isinstance(p.get("loss"), (int, float))]
    keyed = [p for p in losses if isinstance(p.get(axis), (int, float))]
    unkeyed = [p["loss"] for p in losses if not isinstance(p.get(axis), (int, float))]
    truth: dict[float, float] = {k: v for k, v in record}
    counts = dict.fromkeys(("record", "exact", "no_step", "missing", "false", "extra"), 0)
    counts["record"] = len(truth)
    if axis == "epoch":  # the epoch's last point is the one it settles on
        last: dict[float, float] = {}
        for p in keyed:
            last[float(p[axis])] = p["loss"]
        judged = {k: [v] for k, v in last.items()}
    else:
        judged = {}
        for p in keyed:
            judged.setdefault(float(p[axis]), []).append(p["loss"])
    for key, values in judged.items():
        if key not in truth:  # a frame between two recorded steps: not judged
            counts["extra"] += len(values)
            continue
        counts["false"] += sum(not close(v, truth[key]) for v in values)
    for key, value in truth.items():
        if any(close(v, value) for v in judged.get(key, [])):
            counts["exact"] += 1
        elif any(close(v, value) for v in unkeyed):
            counts["no_step"] += 1
        else:
            counts["missing"] += 1
    return counts


def gpudeck(env: dict[str, str], *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args], env=env, text=True, capture_output=True, check=True, **kw
    )


def run_case(
    case: Case, python: str, pty: bool, home: Path, env: dict[str, str], retry: str = ""
) -> dict[str, Any]:
    name = case.name + ("-pty" if pty else "")
    job = name + retry  # a job name of its own, and its own outputs
    out = home / "out" / job
    out.mkdir(parents=True)
    # the case's own dir is its work dir (Lightning writes lightning_logs/ there, as for its users)
    argv = [str(CASES / a) if a.endswith(".py") else a.replace("{out}", str(out)) for a in case.args]
    if "{out}" not in case.args:
        argv.insert(argv.index(next(a for a in argv if a.endswith(".py"))) + 1, str(out))
    flags = ["--pty"] if pty else []
    gpudeck(env, "run", "--name", job, "--workdir", str(out), *flags, "--", python, *argv)
    log = gpudeck(env, "logs", "-f", job, timeout=600).stdout  # follows until the job ends
    (out / "output.log").write_text(log)
    points = [
        json.loads(line)["values"] for line in gpudeck(env, "metrics", "--json", job).stdout.splitlines()
    ]
    (out / "points.json").write_text(json.dumps(points))
    never = never_drawn(out) if "rich" in case.args else None
    try:
        record = json.loads((out / "record.json").read_text())
    except FileNotFoundError:
        return {"name": name, "error": "no record.json (the case failed: %s)" % (out / "output.log")}
    return {
        "name": name,
        "axis": record["axis"],
        "recorded_by": case.record,
        **judge(record["axis"], record["points"], points),
        "stepless": sum(1 for p in points if "loss" in p and record["axis"] not in p),
        "log_kib": len(log.encode("utf-8")) / 1024,  # what the redraws cost in output.log
        "never_printed": "-" if never is None else len(never),
    }


def checked(case: Case, python: str, pty: bool, home: Path, env: dict[str, str]) -> dict[str, Any]:
    """run_case, once more when gpudeck itself failed (a loaded machine's agent can time out): a
    second failure is the case's row, not the end of the run."""
    for attempt in (1, 2):
        try:
            return run_case(case, python, pty, home, env, "-retry" if attempt == 2 else "")
        except subprocess.CalledProcessError as exc:
            why = (exc.stderr or "").strip().splitlines()[-1:] or [f"exit {exc.returncode}"]
            print(f"{case.name}: gpudeck {exc.cmd[3]} failed: {why[0]}", file=sys.stderr, flush=True)
    return {"name": case.name + ("-pty" if pty else ""), "error": "gpudeck failed twice: " + why[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default="/work/fwvenv/bin/python", help="the frameworks' venv python")
    ap.add_argument("--pty", choices=("off", "on", "both"), default="off")
    ap.add_argument("--only", nargs="*", default=(), help="case names")
    ap.add_argument("--port", type=int, default=29517, help="torchrun's master port")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="gpudeck-frameworks-"))
    env = dict(os.environ, GPUDECK_HOME=str(home / "gpudeck"), PYTHONPATH=str(ROOT), KERAS_BACKEND="torch")
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.pty]
    rows = []
    for case in cases(args.port):
        if args.only and case.name not in args.only:
            continue
        for pty in modes:
            row = checked(case, args.python, pty, home, env)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(f"outputs: {home}/out\n")
    print(
        "| case | record (axis) | recorded | exact | no-step | false | missing | never printed | extra "
        "| stepless | log KiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['name']} | {r['error']} |||||||||")
            continue
        print(
            f"| {r['name']} | {r['recorded_by']} ({r['axis']}) | {r['record']} | {r['exact']} | "
            f"{r['no_step']} | {r['false']} | {r['missing']} | {r['never_printed']} | {r['extra']} | "
            f"{r['stepless']} | {r['log_kib']:.0f} |"
        )


if __name__ == "__main__":
    main()
