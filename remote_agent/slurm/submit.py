"""Submitting a Slurm job: one node dir per rank (spec, control slot, slurm.json), the sbatch
script beside node 0's files, then `sbatch --parsable`. A refused submission leaves nothing."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List

from ..storage.files import ensure_private_dir, write_private_atomic
from ..storage.jsonio import dumps
from ..storage.layout import JobFiles, job_dir
from ..supervision.control import make_control_slot
from ..supervision.launcher import self_command
from .commands import SlurmError, checked
from .record import write_record
from .script import SCRIPT_NAME, batch_script, sbatch_argv


def node_names(spec: Dict[str, Any]) -> List[str]:
    return [str(rank) for rank in range(int(spec["placement"].get("nodes", 1)))]


def submit(root: Path, spec: Dict[str, Any]) -> str:
    """Makes the job's node dirs and submits it; the Slurm job id. SlurmError (nothing left behind)
    when sbatch refuses it; FileExistsError when the job's dirs exist."""
    first = job_dir(root, spec["id"], "0")
    job_root = first.parent
    ensure_private_dir(job_root.parent)
    os.mkdir(str(job_root), 0o700)
    try:
        for node in node_names(spec):
            directory = job_dir(root, spec["id"], node)
            os.mkdir(str(directory), 0o700)
            files = JobFiles(directory)
            write_private_atomic(files.spec, dumps(dict(spec, node=node)).encode("utf-8"))
            make_control_slot(files.control)
        script = first / SCRIPT_NAME
        argv = sbatch_argv(spec, script, first)
        write_private_atomic(script, batch_script(spec, self_command(), job_root, argv).encode("utf-8"))
        out = checked(argv, 60.0)
        slurm_id = out.strip().split(";")[0]
        if not slurm_id.isdigit():
            raise SlurmError("sbatch answered %r, not a job id" % out.strip()[:100])
        for node in node_names(spec):
            write_record(
                job_dir(root, spec["id"], node),
                {"job_id": slurm_id, "script": str(script.resolve()), "submitted_at": time.time()},
            )
        return slurm_id
    except BaseException:
        shutil.rmtree(str(job_root), ignore_errors=True)
        raise
