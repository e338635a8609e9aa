"""What the new-job form names on this machine, checked and read in a worker (a stat may hang on a
dead network mount; an env file is IO): the local workdir, the directory to sync, env files."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace

from ..errors import GpudeckError
from ..hosts_file import LOCAL
from ..sync.options import DEFAULT_MAX_FILE_SIZE, SyncError, host_sync_settings
from .node_spec import host_entry
from .options import LaunchOptions, job_env


@dataclass(frozen=True)
class Checked:
    options: LaunchOptions | None  # None: `problem` says why, about the form's `field`
    problem: str | None = None
    field: str = "command"


def local_checks(options: LaunchOptions, env_files: str) -> Checked:
    """The options with the env files' values under the form's own env (which wins, as --env does)
    and the host's sync file-size limit; or the first problem, naming its field."""
    if options.host == LOCAL and options.workdir:
        problem = directory_problem(options.workdir)
        if problem:
            return Checked(None, f"workdir {problem}", "workdir")
    if options.sync is not None:
        problem = directory_problem(options.sync.directory)
        if problem:
            return Checked(None, f"sync {problem}", "sync")
        try:
            _, limit = host_sync_settings(options.host, host_entry(options.host).extra)
        except (SyncError, GpudeckError) as exc:
            return Checked(None, str(exc), "sync")
        options = replace(options, sync=replace(options.sync, max_file_size=limit or DEFAULT_MAX_FILE_SIZE))
    try:
        files = shlex.split(env_files)
        if files:
            merged = dict(job_env(files, []))
            merged.update(options.env)
            options = replace(options, env=tuple(merged.items()))
    except ValueError as exc:
        return Checked(None, f"env files: {exc}", "env_files")
    except GpudeckError as exc:
        return Checked(None, str(exc), "env_files")
    return Checked(options)


def directory_problem(path: str) -> str | None:
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.exists(full):
        return f"{full}: no such directory on this machine"
    if not os.path.isdir(full):
        return f"{full}: not a directory"
    return None
