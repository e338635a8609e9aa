"""Where a restart-mode `scale +1` spends its time: a per-phase timeline from the journals of the old
and the new job (the host's clock, `t`), the new rank 0's `resumed` event (its `startup` marks,
trainer/startup.py) and the client's own clock around the command. Used by bench_scale.py.

Phases, each from the end of the one before (seconds):
  cli+preflight   the scale command starts, finds the job, plans, runs the pre-flight, asks the stop
  checkpoint      SIGTERM reaches the trainer → its checkpoint on disk (the step in flight finishes)
  old exit        → every old node's supervisor journaled `stopped` (workers, torchrun, tree gone)
  relaunch        → every new node's supervisor journaled `running` (the agents' restarts)
  launcher        → torchrun's torch import done (absent when the launcher does not import torch)
  rendezvous      → the worker process exists (torchrun's rendezvous and spawn)
  import torch    → the worker's imports are done (a direct launch: bash, python and the import)
  group           → init_process_group returned (gloo: without waiting for the other ranks)
  peers           → the first collective returned: every rank is up (waits for the slowest)
  restore         → the checkpoint loaded (model, checkpoint choice and load)
  first step      → the first metric at the new world size journaled
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remote_agent.storage.records import expand


def records(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects (a journal's dense `points` lines as their metric records)."""
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.extend(expand(obj))
    return out


def _first(recs: list[dict[str, Any]], pred) -> float | None:  # noqa: ANN001 - a predicate
    return next((float(r["t"]) for r in recs if pred(r)), None)


def _event(name: str):  # noqa: ANN202
    return lambda r: r.get("kind") == "event" and r.get("event") == name


def _state(*names: str):  # noqa: ANN202
    return lambda r: r.get("kind") == "state" and r.get("state") in names


def timeline(jobs: Path, old: str, new: str, t0: float, t_return: float) -> list[tuple[str, float]]:
    """[(phase, seconds)] for one resize; a phase whose marks are missing is left out (its time
    goes to the next phase that has them)."""
    olds = [records(p / "events.jsonl") for p in sorted((jobs / old).iterdir())]
    news = [records(p / "events.jsonl") for p in sorted((jobs / new).iterdir())]
    rank0 = records(jobs / new / "0" / "events.jsonl")
    resumed = next((r for r in rank0 if _event("resumed")(r)), {})
    marks = (resumed.get("data") or {}).get("startup") or {}
    stop_asked = [t for recs in olds if (t := _first(recs, _event("stop_requested"))) is not None]
    saved = [t for recs in olds if (t := _first(recs, _event("checkpoint_saved"))) is not None]
    ended = [
        t for recs in olds if (t := _first(recs, _state("stopped", "exited", "failed", "killed"))) is not None
    ]
    running = [t for recs in news if (t := _first(recs, _state("running"))) is not None]
    # the new job trains only at the new size (the journal drops `world_size` from metrics)
    after = rank0[rank0.index(resumed) + 1 :] if resumed else []
    step = _first(after, lambda r: r.get("kind") == "metric" and "loss" in (r.get("values") or {}))
    points = [
        ("cli+preflight", min(stop_asked, default=None)),
        ("checkpoint", min(saved, default=None)),
        ("old exit", max(ended, default=None)),
        ("relaunch", max(running, default=None)),
        ("launcher", marks.get("launcher_imported")),
        ("rendezvous", marks.get("process_started") if "launcher_imported" in marks else None),
        ("import torch", marks.get("imported")),
        ("group", marks.get("joined")),
        ("peers", marks.get("peers")),
        ("restore", marks.get("restored")),
        ("first step", step),
    ]
    return _phases(points, t0, t_return)


def elastic_timeline(jobs: Path, job: str, t0: float, t_return: float) -> list[tuple[str, float]]:
    """[(phase, seconds)] for an elastic `+1`: the job keeps its id, node 0 keeps running (its
    journal holds the workers' stop and the new rank 0's resume), one more node joins.
      launch         the command starts, pre-flight, the new node's supervisor journaled `running`
      join+stop      its torchrun imports torch and joins; the others' agents see it waiting and
                     SIGTERM their workers, which checkpoint (→ checkpoint_saved after t0)
      respawn        → the new rank 0 worker process exists (old workers exit, the rendezvous re-forms)
      import torch, group, peers, restore, first step   as in timeline()"""
    node0 = [r for r in records(jobs / job / "0" / "events.jsonl") if float(r.get("t", 0)) >= t0]
    joined = max((str(p.name) for p in (jobs / job).iterdir() if p.name.isdigit()), key=int)
    running = _first(records(jobs / job / joined / "events.jsonl"), _state("running"))
    resumed = next((r for r in node0 if _event("resumed")(r)), {})
    marks = (resumed.get("data") or {}).get("startup") or {}
    after = node0[node0.index(resumed) + 1 :] if resumed else []
    points = [
        ("launch", running),
        ("join+stop", _first(node0, _event("checkpoint_saved"))),
        ("respawn", marks.get("process_started")),
        ("import torch", marks.get("imported")),
        ("group", marks.get("joined")),
        ("peers", marks.get("peers")),
        ("restore", marks.get("restored")),
        (
            "first step",
            _first(after, lambda r: r.get("kind") == "metric" and "loss" in (r.get("values") or {})),
        ),
    ]
    return _phases(points, t0, t_return)


def _phases(points: list[tuple[str, float | None]], t0: float, t_return: float) -> list[tuple[str, float]]:
    out, last = [], t0
    for name, t in points:
        if t is None:
            continue
        out.append((name, max(0.0, t - last)))
        last = max(last, t)
    out.append(("(command returned at)", t_return - t0))
    return out


def show(phases: list[tuple[str, float]]) -> str:
    return "  ".join(f"{name} {secs:.2f}" for name, secs in phases)
