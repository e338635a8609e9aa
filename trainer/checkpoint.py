"""Atomic local checkpoints holding only tensors and plain values (`weights_only=True` loads them)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import tempfile
from typing import Any

import numpy as np
import torch

NAME = re.compile(r"^ckpt-(\d{8,})\.pt$")


def path_for(directory: str, step: int) -> str:
    return os.path.join(directory, f"ckpt-{step:08d}.pt")


def save_atomic(state: dict[str, Any], path: str) -> None:
    """Write to a temp file in the same directory, fsync it, rename over, fsync the directory:
    a crash or SIGKILL at any point leaves either the old file or the new one, never a torn one."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pt", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def list_steps(directory: str) -> list[int]:
    """Steps of the checkpoint files in `directory`, newest first."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted((int(m.group(1)) for n in names if (m := NAME.match(n))), reverse=True)


def load(path: str) -> dict[str, Any]:
    state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)  # a capture() dict
    return state


def run_id_of(path: str) -> str | None:
    """The run that wrote a checkpoint (None: unreadable, or written before run ids existed).
    mmap: only the pickled header is read, not the tensors, so asking is cheap even for big models."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:
        return None
    run = state.get("run_id") if isinstance(state, dict) else None
    return run if isinstance(run, str) else None


def newest_valid(directory: str, run_id: str | None = None) -> tuple[int, dict[str, Any]] | None:
    """The newest checkpoint that loads and has the keys a resume needs (of run `run_id` only, when
    given); unreadable ones are skipped."""
    for step in list_steps(directory):
        if run_id is not None and run_id_of(path_for(directory, step)) != run_id:
            continue
        try:
            state = load(path_for(directory, step))
        except Exception:
            continue
        if (
            isinstance(state, dict)
            and {"model", "optimizer", "step"} <= state.keys()
            and state["step"] == step
        ):
            return step, state
    return None


def prune(directory: str, keep: int, run_id: str | None = None) -> None:
    """Keep the newest `keep` checkpoints (of run `run_id` only, when given: another run's files in
    the same directory are never deleted by this one)."""
    steps = list_steps(directory)
    if run_id is not None:
        steps = [s for s in steps if run_id_of(path_for(directory, s)) == run_id]
    for step in steps[keep:]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path_for(directory, step))


def rng_state() -> dict[str, Any]:
    """Process RNG streams as tensors and plain values (numpy's array becomes a tensor)."""
    state = np.random.get_state(legacy=True)  # legacy (the default): the MT19937 tuple
    if isinstance(state, dict):  # only a non-MT19937 generator gives a dict; the global one is MT19937
        raise TypeError(f"numpy's global generator is not MT19937: {state.get('bit_generator')}")
    kind, keys, pos, has_gauss, cached = state
    out: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(
        (n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"])
    )
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


OOM_RECORD = "oom_backoff.json"


def write_oom_record(directory: str, micro_batch: int) -> str:
    """Beside the checkpoints: the micro-batch a DDP run must restart with after an out-of-memory."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, OOM_RECORD)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump({"micro_batch": micro_batch}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def read_oom_record(directory: str) -> int | None:
    try:
        with open(os.path.join(directory, OOM_RECORD)) as f:
            return int(json.load(f)["micro_batch"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
