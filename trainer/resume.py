"""Which checkpoint a run continues from. A run resumes only its own checkpoints (same run id: the
`--run-id`, else gpudeck's job name, which `gpudeck restart` and scaling keep), or, with `--resume`,
the newest one whoever wrote it. A run with neither starts fresh: an old `./checkpoints` never makes
a new run silently continue (or skip) someone else's training."""

from __future__ import annotations

import argparse
import os
import uuid
from dataclasses import dataclass
from typing import Any

from . import checkpoint as ckpt


def run_id(args: argparse.Namespace) -> str:
    """This run's id: explicit, gpudeck's job name, or a new one (a plain run is a new run)."""
    return args.run_id or os.environ.get("GPUDECK_JOB_NAME") or f"run-{uuid.uuid4().hex[:12]}"


@dataclass
class Choice:
    found: tuple[int, dict[str, Any]] | None  # (step, state) to resume from
    ignored_step: int | None = None  # the newest checkpoint in the directory, left alone (another run's)
    ignored_run: str | None = None


def choose(args: argparse.Namespace) -> Choice:
    if args.no_resume:
        return Choice(None)
    if args.resume:
        return Choice(ckpt.newest_valid(args.checkpoint_dir))
    found = ckpt.newest_valid(args.checkpoint_dir, args.run_id)
    steps = ckpt.list_steps(args.checkpoint_dir)
    if found is None and steps:
        return Choice(None, steps[0], ckpt.run_id_of(ckpt.path_for(args.checkpoint_dir, steps[0])))
    return Choice(found)


def nothing_to_train(step: int, args: argparse.Namespace) -> SystemExit:
    """A checkpoint already at or past --steps: reported as a failure, never as a finished run."""
    return SystemExit(
        f"trainer: the checkpoint in {args.checkpoint_dir} is at step {step}, already at or past "
        f"--steps {args.steps}: nothing to train (raise --steps, or --no-resume to start over)"
    )
