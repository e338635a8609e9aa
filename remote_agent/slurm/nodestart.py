"""`gpudeck-agent slurm-node JOB_ROOT`: run by srun once per node inside the allocation. Finds this
node's rank (SLURM_NODEID), the first node's address for a rendezvous (`scontrol show hostnames`,
then the node's NodeAddr: compute node names often do not resolve), and runs the supervisor of
jobs/<id>/<rank>/ in this process, exactly as on an SSH host."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

from ..storage.files import open_private
from ..storage.layout import JobFiles
from ..supervision.jobspec import load_spec
from ..supervision.launcher import supervisor_env
from .commands import SlurmError, checked


def node_rank(env: Mapping[str, str]) -> int:
    for name in ("SLURM_NODEID", "SLURM_PROCID"):
        value = env.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def first_node_address(env: Mapping[str, str]) -> str:
    """The address of the allocation's first node, or 127.0.0.1 when Slurm cannot say."""
    try:
        names = checked(["scontrol", "show", "hostnames", env.get("SLURM_JOB_NODELIST", "")]).split()
        if not names:
            return "127.0.0.1"
        for token in checked(["scontrol", "show", "node", "-o", names[0]]).split():
            if token.startswith("NodeAddr="):
                return token.partition("=")[2] or names[0]
        return names[0]
    except SlurmError:
        return "127.0.0.1"


def start_node(job_root: str) -> int:
    rank = node_rank(os.environ)
    files = JobFiles(Path(job_root) / str(rank))
    try:
        spec = load_spec(files.spec)
    except (OSError, ValueError) as exc:
        print("gpudeck-agent slurm-node: %s: %s" % (files.spec, exc))
        return 2
    place = spec.get("placement") or {}
    master = first_node_address(os.environ)
    os.environ.update(
        {
            "MASTER_ADDR": master,
            "MASTER_PORT": str(place.get("master_port", 29500)),
            "NODE_RANK": str(rank),
            "GPUDECK_NNODES": str(place.get("nodes", 1)),
            "GPUDECK_SLURM_JOB_ID": os.environ.get("SLURM_JOB_ID", ""),
            # torchrun reads each option from PET_<OPTION>: the client's torchrun line (the one it
            # makes for SSH hosts, tui/actions/nodes.py) learns its place here, at allocation time.
            "PET_NNODES": str(place.get("nodes", 1)),
            "PET_NODE_RANK": str(rank),
            "PET_MASTER_ADDR": master,
            "PET_MASTER_PORT": str(place.get("master_port", 29500)),
        }
    )
    env = supervisor_env(files.dir, os.environ)
    os.environ.clear()
    os.environ.update(env)
    # The supervisor's own messages go where an SSH host's go (srun's stdout is the batch output).
    log_fd = open_private(files.supervisor_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    sys.stdout.flush()
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    from ..supervision.entry import run_job_dir

    code = run_job_dir(str(files.dir))
    return code or command_exit(files)


def command_exit(files: JobFiles) -> int:
    """The command's own exit code as this task's (srun's, then the batch's): Slurm then records
    FAILED with the trainer's code, as `sacct` shows it (3:0), not a supervisor's 0."""
    from ..jobstate import JobView

    obj = JobView(files.dir.parent.name, files.dir.name, files.dir).refresh()  # it may cache this fold
    code = obj.get("exit_code")
    if isinstance(code, int) and 0 < code < 256:
        return code
    return 1 if obj.get("state") in ("failed", "killed") else 0
