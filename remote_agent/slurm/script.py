"""A Slurm job's sbatch command and script: every option on sbatch's command line (argv items, no
shell), the script only starts gpudeck's supervisor once per node with srun."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Dict, List

SCRIPT_NAME = "slurm.sbatch"
STOPPING_NAME = "slurm.stopping"  # in node 0's dir: gpudeck asked the job to stop
STOP_WAIT = 120
OUTPUT_PATTERN = "slurm-%j.out"  # the batch step's own output (srun's and the supervisors' start-up)


def stopping_marker(job_root: Path) -> Path:
    return job_root / "0" / STOPPING_NAME


def sbatch_argv(spec: Dict[str, Any], script: Path, out_dir: Path) -> List[str]:
    """`out_dir` exists before sbatch runs: a missing output dir fails the job with no trace."""
    place = spec["placement"]
    nodes = int(place.get("nodes", 1))
    argv = [
        "sbatch",
        "--parsable",
        "--job-name=gpudeck-%s" % spec["name"],
        "--nodes=%d" % nodes,
        "--ntasks-per-node=1",
        "--output=%s" % (out_dir.resolve() / OUTPUT_PATTERN),
        "--chdir=%s" % out_dir.resolve(),
    ]
    for key, option in (
        ("partition", "--partition"),
        ("account", "--account"),
        ("qos", "--qos"),
        ("time", "--time"),
    ):
        if place.get(key):
            argv.append("%s=%s" % (option, place[key]))
    if place.get("time") and place.get("warn_before"):  # the batch shell's warning: slurm-warn
        argv.append("--signal=B:USR1@%d" % int(place["warn_before"]))
    if place.get("gpus_per_node") is not None:
        argv.append("--gpus-per-node=%d" % int(place["gpus_per_node"]))
    argv += list(place.get("sbatch_args") or [])
    argv.append(str(script.resolve()))
    return argv


def batch_script(spec: Dict[str, Any], agent: List[str], job_root: Path, submitted: List[str]) -> str:
    """`agent`: the argv that runs this agent (the same zipapp, on the shared file system)."""
    nodes = int(spec["placement"].get("nodes", 1))
    node_start = agent + ["slurm-node", str(job_root.resolve())]
    warn = agent + [
        "slurm-warn",
        str(job_root.resolve()),
        str(int(spec["placement"].get("warn_before") or 0)),
    ]
    return "\n".join(
        [
            "#!/bin/bash",
            "# gpudeck job %s (%s), %d node(s): its sbatch script, kept beside the job."
            % (spec["id"], spec["name"], nodes),
            "# Submitted by the login node's agent with:",
            "#   " + " ".join(shlex.quote(a) for a in submitted),
            "# One task per node: each starts gpudeck's supervisor, which runs the command as on any host",
            "# and journals to jobs/%s/<node rank>/ on the shared directory." % spec["id"],
            "# Near the time limit Slurm sends USR1 here (--signal=B:USR1@N): every node stops and checkpoints.",
            "warn() { %s; }" % " ".join(shlex.quote(a) for a in warn),
            "trap warn USR1",
            "srun --nodes=%d --ntasks=%d --ntasks-per-node=1 %s &"
            % (nodes, nodes, " ".join(shlex.quote(a) for a in node_start)),
            "step=$!",
            "wait $step; code=$?",
            "while kill -0 $step 2>/dev/null; do wait $step; code=$?; done  # a trap ends a wait early",
            "# A gpudeck stop: the supervisors ended the command; wait for the stop's scancel, so Slurm",
            "# records the job CANCELLED as for any user's scancel (bounded, should the agent be gone).",
            "if [ -e %s ]; then sleep %d & wait $!; fi"
            % (shlex.quote(str(stopping_marker(job_root).resolve())), STOP_WAIT),
            "exit $code",
            "",
        ]
    )
