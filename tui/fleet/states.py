"""A job's state words, how a multi-node job's state follows from its nodes', and why it ended.

The one copy of these decisions: `ps`, `inspect`, the actions and every TUI view call it, so the
CLI and the TUI cannot tell two stories about one job.
"""

from __future__ import annotations

from collections.abc import Iterable

from remote_agent.jobstate import TERMINAL_STATES
from remote_agent.supervision.elastic_failure import DROPPED, PEER_LOST

# `pending`: a Slurm job waiting for its allocation (the login node's agent says so; never journaled)
JOB_STATES = ("pending", "starting", "running", "exited", "failed", "stopped", "killed", "lost")
ACTIVE = frozenset({"pending", "starting", "running"})
# Known endings (the agent's word): nothing of the job runs. `lost` is not one of them — its
# supervisor is gone and its processes may still run — so a lost job can still be stopped or killed.
ENDED = frozenset(TERMINAL_STATES)
# A multi-node job is as alive as its liveliest node; among ended nodes the worst ending shows.
STATE_ORDER = ("running", "starting", "pending", "lost", "failed", "killed", "stopped", "exited")


# A running multi-node job with a node no agent answers for (its host unreachable): derived by
# the client, never journaled; `gpudeck scale JOB -1` drops the missing node.
DEGRADED = "degraded"


def regrouped_without_them(regroups: Iterable[object], answering: int) -> bool:
    """An elastic job whose unreachable nodes have left it: its last regroup (each node's agent
    keeps the last it journaled, {to, t}) re-formed it at no more nodes than still answer, so
    torchrun went on without them and the job is running, not degraded. Before that regroup it
    waits for them (the rendezvous' timeout): degraded."""
    seen = [r for r in regroups if isinstance(r, dict) and isinstance(r.get("t"), (int, float))]
    if not seen:
        return False
    to = max(seen, key=lambda r: r["t"]).get("to")
    return isinstance(to, int) and not isinstance(to, bool) and 0 < to <= answering


def degraded_why(missing: Iterable[tuple[str, str, str]]) -> str:
    """(node, host, reason) of each missing node, in one line."""
    return "; ".join(f"node {node} on {host} unreachable ({reason})" for node, host, reason in missing)


# A node's cause that explains the others' (a rank's NCCL timeout is why its peers failed too):
# shown for the whole job whichever node said it.
ROOT_CAUSES = ("NCCL timeout",)


def is_root_cause(cause: object) -> bool:
    return isinstance(cause, str) and cause.startswith(ROOT_CAUSES)


def cause_order(cause: object) -> int:
    """Which node's cause a multi-node job shows, lowest first: 0 a root cause (an NCCL timeout),
    1 a node's own failure, 2 what the nodes left saw when a peer died (a lost connection), or none."""
    if is_root_cause(cause):
        return 0
    return 1 if isinstance(cause, str) and cause and not PEER_LOST.search(cause) else 2


def left_job(reason: object) -> bool:
    """A node that dropped itself from an elastic job that ran on (its stop reason says so): the
    job's own ending comes from the nodes that stayed."""
    return isinstance(reason, str) and reason.startswith(DROPPED)


def job_state(node_states: Iterable[str]) -> str:
    """The job's state from its nodes' ([lost, failed] → lost: part of it may still run)."""
    order = {s: i for i, s in enumerate(STATE_ORDER)}
    states = list(node_states)
    return min(states, key=lambda s: order.get(s, len(order))) if states else "starting"


def why(
    state: str,
    cause: str | None = None,
    exit_code: int | None = None,
    signal: str | None = None,
    reason: str | None = None,
) -> str:
    """One short line on why a job is in its state ("" when there is nothing to say).

    failed: the agent's diagnosis (`cause`), else the exit code or signal; stopped or killed: who
    asked when it was not the user (a budget, an idle stop, the fleet budget); lost: the cause."""
    if state == "failed":
        if cause:
            return cause
        if exit_code is not None:
            return f"exit code {exit_code}"
        return f"signal {signal}" if signal else "failed"
    if state in ("stopped", "killed"):
        return reason if reason and reason != "user" else ""
    if state == "lost":
        return cause or "its supervisor is gone"
    if state == "pending":  # a Slurm job: Slurm's reason (Resources, Priority…)
        return cause or "waiting for allocation"
    if state == "exited" and exit_code is None and cause:
        return cause  # adopted after its supervisor was lost: the exit code is unknown, say so
    return ""
