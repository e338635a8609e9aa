"""The job's variables for its container, in a 0600 file of the node's dir that is bind-mounted
read-only and sourced by gpudeck's PID 1 (wrapper.py): the values never enter the runtime's config
of the container (`podman inspect` / `docker inspect` show none), nor any command line.

A name the image's shell cannot export (not `[A-Za-z_][A-Za-z0-9_]*`, e.g. `a.b`) is still passed
by name (`--env NAME`), the way it was before: that one value is in the container's config."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, Mapping, Optional, Tuple

from ..storage.files import write_private_atomic

ENV_FILE_NAME = "container.env"  # in the node's dir; removed once the job has ended
MOUNTED_AT = "/.gpudeck/env"  # where PID 1 reads it inside
_SHELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def env_file(job_dir: Path) -> Path:
    return job_dir / ENV_FILE_NAME


def split_names(names: List[str]) -> Tuple[List[str], List[str]]:
    """(names the file carries, names passed by name)."""
    in_file = [n for n in names if _SHELL_NAME.match(n)]
    return in_file, [n for n in names if not _SHELL_NAME.match(n)]


def quote(value: str) -> str:
    """POSIX single quotes (newlines included): dash, busybox sh and bash read it back exactly."""
    return "'" + value.replace("'", "'\\''") + "'"


def write_env_file(job_dir: Path, names: List[str], env: Mapping[str, str]) -> Path:
    """`export NAME='value'` for each of `names` (values from `env`: the job's environment)."""
    lines = ["export %s=%s\n" % (name, quote(env[name])) for name in names if name in env]
    path = env_file(job_dir)
    write_private_atomic(path, "".join(lines).encode("utf-8"))
    return path


def remove_env_file(job_dir: Optional[Path]) -> None:
    if job_dir is None:
        return
    try:
        os.unlink(str(env_file(job_dir)))
    except FileNotFoundError:
        pass
