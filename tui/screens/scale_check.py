"""Why `+`/`-` cannot resize a job, said before asking (issue 36, finding 9): `+` used to ask, then
refuse in a toast that vanished (no checkpoint to resume from), and `-` was silent on a one-node job.
The key is greyed in the Footer (check_action) and pressing it says this line."""

from __future__ import annotations

from ..actions.scale import checkpoint_of
from ..fleet import JobModel

CHECKPOINT = (
    "its command has no --checkpoint-dir or --checkpoint-uri: a restart-mode resize stops every node "
    "and resumes from a checkpoint"
)


def scale_refusal(job: JobModel | None, count: str, running_nodes: int) -> str | None:
    """The one line that says why `count` ("+1"/"-1") cannot resize `job` now, or None."""
    if job is None:
        return "no job selected"
    label = job.name or job.id
    if job.watch is not None:
        return f"{label} is a watched run: gpudeck did not start it, so it cannot resize it"
    if count == "-1" and running_nodes <= 1:
        return f"{label} runs on one node: nothing to remove (s stops it)"
    if not job.placement.elastic and job.command and checkpoint_of(list(job.command)) is None:
        return f"{label} cannot be resized: {CHECKPOINT}"
    return None
