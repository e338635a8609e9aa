"""`gpudeck-agent prepare files|env JOB_DIR`: one step of a job's preparation (see __init__)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

from ..spec import JobSpec, SpecError
from ..storage.layout import JobFiles
from ..supervision.jobspec import load_spec
from . import CAUSE_PREFIX, PREPARE_FAILED


class PrepareError(Exception):
    """A step could not finish; the message is the job's cause (one line)."""


def agent_root(job_dir: Path) -> Path:
    """The agent dir a job dir lives in: <agent dir>/jobs/<id>/<node>."""
    return job_dir.resolve().parent.parent.parent


def run_step(step: str, job_dir: str, python: Optional[str] = None, in_container: bool = False) -> int:
    """The exit status for the job's script: 0, or PREPARE_FAILED after the cause's line."""
    directory = Path(job_dir)
    try:
        spec = JobSpec.from_wire(load_spec(JobFiles(directory).spec))
        if step == "files":
            prepare_files(spec, directory)
        elif step == "env":
            where = prepare_env(spec, directory, python or "python3", in_container)
            if where:
                sys.stdout.write(where + "\n")  # the script reads it: the env to activate
        elif step == "image":
            prepare_image(spec, directory)
        else:
            raise PrepareError("unknown prepare step %r" % step)
    except (PrepareError, SpecError, OSError, ValueError) as exc:
        sys.stdout.flush()
        sys.stderr.write("\n%s%s\n" % (CAUSE_PREFIX, one_line(str(exc))))
        sys.stderr.flush()
        return PREPARE_FAILED
    return 0


def prepare_files(spec: JobSpec, job_dir: Path) -> None:
    root = agent_root(job_dir)
    if spec.code is not None:
        from ..codestore.materialize import materialize

        materialize(root, spec.code, Path(spec.workdir))
    if spec.data:
        from ..datafetch.fetch import fetch_all

        fetch_all(root, spec, job_dir, Path(spec.workdir))


def prepare_env(spec: JobSpec, job_dir: Path, python: str, in_container: bool = False) -> Optional[str]:
    """The environment's directory to activate, or None when the job asks for none. In a container
    (containers/environment.py) its key holds the image id that `prepare image` recorded."""
    if spec.environment is None:
        return None
    from ..pyenv.build import ensure_environment

    context = ""
    if in_container:
        from ..containers.present import recorded_image

        context = recorded_image(job_dir)
        # uv's cache is in the container's own layer, the environment on a mount: no hard links.
        os.environ.setdefault("UV_LINK_MODE", "copy")
    return str(ensure_environment(agent_root(job_dir), spec.environment, python, job_dir, context))


def prepare_image(spec: JobSpec, job_dir: Path) -> None:
    """On the host, for a container job's environment: its image present, its id recorded."""
    if spec.runtime is None or spec.environment is None:
        raise PrepareError("prepare image: not a container job with an environment")
    from ..containers.present import ensure_image

    ensure_image(spec, job_dir, agent_root(job_dir))


def one_line(text: str) -> str:
    return " ".join(text.split())[:400] or "preparation failed"
