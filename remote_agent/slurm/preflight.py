"""Before a Slurm job is stopped for a restart or a resize: `sbatch --test-only` with the arguments
the new allocation will be submitted with (the `slurm` op's `preflight`). A partition, account, QOS
or node count Slurm refuses is said here, while the old allocation still runs; a job Slurm would
only queue passes (test-only says when it would start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

from ..names import is_job_id
from ..storage.layout import JobFiles, job_dir
from ..supervision.jobspec import load_spec
from ..supervision.launcher import self_command
from .commands import SlurmError, run
from .script import SCRIPT_NAME, batch_script, sbatch_argv
from .states import is_slurm


class PreflightError(Exception):
    """The new allocation would be refused; the message is the one line saying why."""


def preflight(root: Path, job: Any, nodes: Any = None) -> Dict[str, Any]:
    """`job`'s restart as a new allocation of `nodes` nodes (None: as many as before), tried with
    `sbatch --test-only`: {"nodes": N, "said": sbatch's line}; PreflightError when refused."""
    if not is_job_id(job):
        raise PreflightError("preflight.job: not a job id: %r" % (job,))
    first = job_dir(root, job, "0")
    try:
        spec = load_spec(JobFiles(first).spec)
    except (OSError, ValueError) as exc:
        raise PreflightError("job %s: no spec to resubmit (%s)" % (job, exc)) from None
    if not is_slurm(spec):
        raise PreflightError("job %s is not a Slurm job" % job)
    place = dict(spec["placement"])
    if nodes is not None:
        if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= 4096:
            raise PreflightError("preflight.nodes: expected a node count 1..4096, got %r" % (nodes,))
        place["nodes"] = nodes
    spec = dict(spec, placement=place)
    script = first / SCRIPT_NAME
    argv = sbatch_argv(spec, script, first)
    # The script on stdin (sbatch reads it there without a file argument): nothing is written.
    tried = [argv[0], "--test-only"] + argv[1:-1]
    text = batch_script(spec, self_command(), first.parent, argv)
    try:
        code, out, err = run(tried, 60.0, stdin=text)
    except SlurmError as exc:
        raise PreflightError(str(exc)) from None
    said = [line.strip() for line in (err + out).splitlines() if line.strip()]
    if code != 0:
        raise PreflightError(
            "sbatch --test-only refused a %d-node allocation: %s"
            % (place.get("nodes", 1), "; ".join(said[-2:])[:300] or "exit %d" % code)
        )
    return {"nodes": int(place.get("nodes", 1)), "said": (said[-1] if said else "")[:300]}
