"""A job's spec: checked before anything runs, and turned into the command's environment and script."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from ..spec_defaults import DEFAULT_GRACE, SpecError
from ..storage.files import ensure_private_dir
from ..storage.layout import work_dir
from ..storage.specfile import load_spec
from .proctree import JOB_MARKER_VAR, SUPERVISOR_MARKER_VAR

__all__ = ["DEFAULT_GRACE", "SpecError", "job_env", "job_key", "load_spec", "shell_script", "validate_spec"]


def validate_spec(raw: Any, root: Optional[Path] = None) -> Dict[str, Any]:
    """The spec's wire form once checked (remote_agent/spec.py), with its workdir found on this
    host; SpecError naming the first bad field. A job with code runs in `work/<home>` of the agent
    dir `root` (made here; `prepare files` fills it from the snapshot)."""
    from ..spec import JobSpec  # here: a supervisor loads spec.json as it is, without the dataclasses

    spec = JobSpec.from_wire(raw)
    if spec.watch is not None:
        raise SpecError("spec.watch: a watch is launched as one (supervision/watchspec.py)")
    if spec.runtime is not None:  # the runtime found here; GPUs it cannot pass are refused now
        from ..containers.command import resolve_container

        spec = resolve_container(spec)
    if spec.code is not None:
        if root is None:
            raise SpecError("spec.code: this agent dir keeps no code")
        workdir = str(work_dir(root, spec.code.home))
        ensure_private_dir(Path(workdir))
        return spec.replace(workdir=workdir).to_wire()
    workdir = os.path.expanduser(spec.workdir)
    if not os.path.isdir(workdir):
        what = "not a directory" if os.path.exists(workdir) else "no such directory"
        raise SpecError("spec.workdir: %s: %s" % (what, workdir))
    return spec.replace(workdir=workdir).to_wire()


def job_key(spec: Mapping[str, Any]) -> str:
    return "%s/%s" % (spec["id"], spec.get("node", "0"))


def job_env(spec: Mapping[str, Any], base: Mapping[str, str]) -> Dict[str, str]:
    env = dict(base)
    env.pop(SUPERVISOR_MARKER_VAR, None)  # the supervisor's own mark: its job's processes are not supervisors
    env.update(spec.get("env") or {})
    env["PYTHONUNBUFFERED"] = "1"
    env["GPUDECK_JOB_ID"] = spec["id"]
    env["GPUDECK_JOB_NAME"] = spec["name"]
    env["GPUDECK_NODE"] = spec.get("node", "0")
    # Every descendant inherits this marker: it finds the tree even when the supervisor is gone.
    env[JOB_MARKER_VAR] = job_key(spec)
    return env


def shell_script(
    setup: List[str],
    path: Optional[str] = None,
    prepare_files: Optional[List[str]] = None,
    prepare_env: Optional[List[str]] = None,
    python: str = "python3",
    prepare_image: Optional[List[str]] = None,
) -> str:
    """Setup lines, each checked, then `exec "$@"`: the argv reaches exec untouched by the shell.

    `path` restores the launcher's PATH after the login profile: /etc/profile resets PATH for
    login shells, which would silently drop the venv a local user launched from.
    `prepare_files` (argv: the work dir's code and data) runs before the setup lines and
    `prepare_env` (argv, to which the job's python is added) after them; the environment it prints
    is activated. `prepare_image` (argv: a container job's image, made present for the environment
    built inside it) runs after the setup lines too. Any failing ends the script with its status.
    """
    lines = ["export PATH=%s" % shlex.quote(path)] if path else []
    if prepare_files:
        lines.append('%s || exit "$?"' % shlex.join(prepare_files))
    for line in setup:
        message = shlex.quote("gpudeck: setup line failed: %s" % line)
        lines.append(
            '%s\n_gpudeck_rc=$?; if [ "$_gpudeck_rc" -ne 0 ]; then echo %s >&2; exit 97; fi' % (line, message)
        )
    if prepare_image:
        lines.append('%s || exit "$?"' % shlex.join(prepare_image))
    if prepare_env:
        # The job's python as its setup left it: the environment is built from (and keyed by) it.
        lines.append(
            '_gpudeck_env=$(%s --python "$(command -v %s || echo %s)") || exit "$?"'
            % (shlex.join(prepare_env), shlex.quote(python), shlex.quote(python))
        )
        lines.append(
            'if [ -n "$_gpudeck_env" ]; then VIRTUAL_ENV="$_gpudeck_env"; export VIRTUAL_ENV;'
            ' PATH="$_gpudeck_env/bin:$PATH"; export PATH; fi'
        )
    lines.append('exec "$@"')
    return "\n".join(lines)
