"""A node of an `--elastic` job whose own workers fail leaves the job, instead of being retried.

torchrun's elastic agent restarts a failed worker group up to `--max-restarts` times (gpudeck gives
1000, since every regroup uses one), so a node that fails for a reason of its own (a broken GPU, a
bad environment, a bug that only its data hits) would rejoin and fail forever, taking the others
down with it each time. Its supervisor sees torchrun say so in the output (`failed (exitcode: N)
local_rank: R …`, logged at error level whatever LOGLEVEL says) and ends the node: `failed`, with
the worker's cause. The other nodes' agents then re-form without it (MIN of `--elastic` allows).

Not every worker failure is the node's own: when a peer goes away, the ranks left fail in their
collectives (gloo's "Connection closed by peer", an NCCL or store timeout). Those causes, an exit
by a signal (torchrun stopping its workers for a regroup) and the reference trainer's regroup exit
(75, trainer/dist.py) are left to torchrun's restart, as before. Standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Optional, Tuple

from .failure import failure_cause

WORKER_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)")
DROPPED = "node failed: "  # the stop reason of a node that dropped itself: it left a job that ran on
REGROUP_EXIT = 75  # the reference trainer's "a peer left, try again" (trainer/dist.py)
# what a rank says when the failure was a peer's: the connection, the store or a collective's timeout
PEER_LOST = re.compile(
    r"closed by peer|reset by peer|broken pipe|connection refused|DistNetworkError|DistStoreError|"
    r"DistBackendError|RendezvousClosed|NCCL|timed out|timeout|Socket Timeout",
    re.IGNORECASE,
)


def elastic(spec: Dict[str, Any]) -> bool:
    plan = spec.get("multinode")
    return isinstance(plan, dict) and bool(plan.get("elastic"))


def own_failure(
    line: str, tail: Iterable[str], last_exception: Optional[str] = None
) -> Optional[Tuple[int, str]]:
    """(exit code, cause) when `line` is torchrun saying this node's worker failed on its own;
    `tail`: the output's last lines; `last_exception`: the worker's (failure.LastException)."""
    match = WORKER_FAILED.search(line)
    if not match:
        return None
    code = int(match.group(1))
    if code <= 0 or code == REGROUP_EXIT:
        return None  # ended by a signal (torchrun's own stop) or a regroup
    lines = [t for t in tail if not WORKER_FAILED.search(t)]
    if any(PEER_LOST.search(t) for t in [*lines, last_exception or ""]):
        return None  # in doubt, a peer's: torchrun retries, as it would without gpudeck
    return code, failure_cause(
        code, None, lines, last_exception=last_exception
    ) or "exited with code %d" % code
