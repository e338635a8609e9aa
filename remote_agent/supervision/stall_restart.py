"""The `restart` stall action (issue 34): a stalled job is stopped gracefully (the trainer
checkpoints on its stop signal), and once its end is journaled — its GPUs are free then — the same
spec starts again as a new job on this host, `restart_of` the old one, so it goes on from its
checkpoint and the chain is one run in `metrics --chain`, the TUI and the cost. Each restart spends
one of the chain's `stall.restarts` (3 by default): a job that hangs every time is not looped for
ever. One-node jobs only (a multi-node job's other nodes are on other hosts: the client refuses
it). Standard library only (the agent's rule)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Optional

from ..names import new_job_id
from ..spec import STALL_RESTARTS

# What the agent adds to a spec when it launches it; the new job gets its own.
_LAUNCH_FIELDS = ("created_at",)
_GPU_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")  # the old assignment: the launch assigns again


def restarts_left(spec: Dict[str, Any]) -> int:
    """The chain's stall restarts left: the spec's count, the default where it says none."""
    stall = spec.get("stall")
    left = stall.get("restarts", STALL_RESTARTS) if isinstance(stall, dict) else 0
    return left if isinstance(left, int) and not isinstance(left, bool) else 0


def restart_spec(spec: Dict[str, Any], new_id: str) -> Dict[str, Any]:
    """The new job's spec: the same command, name, workdir and settings, a new id, `restart_of`
    the old job, one restart fewer left."""
    new = {k: v for k, v in spec.items() if k not in _LAUNCH_FIELDS}
    new["id"] = new_id
    new["restart_of"] = spec["id"]
    new["stall"] = dict(spec.get("stall") or {}, restarts=restarts_left(spec) - 1)
    if spec.get("gpus"):
        new["env"] = {k: v for k, v in (spec.get("env") or {}).items() if k not in _GPU_ENV}
    return new


def relaunch(root: Path, spec: Dict[str, Any], append: Callable[..., Any]) -> Optional[str]:
    """Start the stalled job again (after its end is journaled); the new id, or None. Either way
    one event says what happened, in the old job's journal."""
    if restarts_left(spec) <= 0:
        append("event", event="stall_restart_refused", data={"why": "no stall restarts left in its chain"})
        return None
    new = restart_spec(spec, new_job_id())
    from ..serving.jobs import JobError, JobTable  # here: only a restart needs the launcher

    try:
        JobTable(root).launch(new)
    except Exception as exc:  # noqa: BLE001 - the old job has ended: say why the new one did not start
        error = str(exc) if isinstance(exc, JobError) else "%s: %s" % (type(exc).__name__, exc)
        append("event", event="stall_restart_failed", data={"error": error[:300]})
        return None
    append("event", event="stall_restarted", data={"job": new["id"], "restarts_left": restarts_left(new)})
    return str(new["id"])
