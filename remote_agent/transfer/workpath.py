"""Which entry of a job's working directory a pull names, reached without following a symlink.

The work dir is the spec's `workdir` as the agent stored it at launch (absolute: a synced job's
`<agent dir>/work/<home>`, a plain job's directory). PATH is relative to it, or absolute inside it;
a `..` component is refused before anything is opened, and each directory on the way is opened
relative to its parent with O_NOFOLLOW, so a symlink the job made cannot lead the pull elsewhere.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import List, Optional, Tuple

from ..names import is_job_id, is_node
from ..storage.layout import JobFiles, job_dir
from ..supervision.jobspec import load_spec
from .frames import fs_name

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class SendError(Exception):
    """The pull cannot be answered; the message is the one line the user sees."""


def job_workdir(root: Path, job: object, node: object) -> str:
    if not is_job_id(job):
        raise SendError("job: expected a job id, got %r" % (job,))
    if not is_node(node):
        raise SendError("node: expected a node name, got %r" % (node,))
    spec_file = JobFiles(job_dir(root, str(job), str(node))).spec
    try:
        spec = load_spec(spec_file)
    except FileNotFoundError:
        raise SendError("no job %s node %s on this host" % (job, node)) from None
    except (OSError, ValueError) as exc:
        raise SendError("%s: unreadable (%s)" % (spec_file, exc)) from None
    workdir = spec.get("workdir") or "~"
    if not isinstance(workdir, str):
        raise SendError("%s: workdir is not a path" % spec_file)
    return os.path.expanduser(workdir)


def parts_of(path: str, workdir: str) -> List[bytes]:
    """PATH's components below the work dir (none: the work dir itself)."""
    if not path or "\0" in path:
        raise SendError("PATH %r: expected a path in the job's working directory" % (path,))
    words = path.split("/")
    if ".." in words:
        raise SendError("%s: '..' leaves the job's working directory (%s)" % (path, workdir))
    parts = [w for w in words if w not in ("", ".")]
    if not path.startswith("/"):
        return [fs_name(p) for p in parts]
    for base in (workdir, os.path.realpath(workdir)):
        base_parts = [w for w in base.split("/") if w not in ("", ".")]
        if parts[: len(base_parts)] == base_parts:
            return [fs_name(p) for p in parts[len(base_parts) :]]
    raise SendError("%s: outside the job's working directory (%s)" % (path, workdir))


def open_target(workdir: str, parts: List[bytes]) -> Tuple[int, Optional[bytes]]:
    """(an fd of the directory holding the target, the target's name), or (the work dir's fd, None)
    for the work dir itself. The caller closes the fd."""
    try:
        fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SendError("the job's working directory %s: %s" % (workdir, exc.strerror or exc)) from None
    for i, part in enumerate(parts[:-1]):
        try:
            below = os.open(part, DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            why = _why_not_dir(fd, part, exc)
            os.close(fd)
            shown = os.fsdecode(b"/".join(parts[: i + 1]))
            raise SendError("%s: %s (in %s)" % (shown, why, workdir)) from None
        os.close(fd)
        fd = below
    if not parts:
        return fd, None
    try:
        os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except OSError as exc:
        os.close(fd)
        shown = os.fsdecode(b"/".join(parts))
        raise SendError("%s: %s (in %s)" % (shown, exc.strerror or exc, workdir)) from None
    return fd, parts[-1]


def _why_not_dir(fd: int, part: bytes, exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:
            if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                return "a symlink; pull follows none (name the path it points to)"
        except OSError:
            pass
        return "not a directory"
    return exc.strerror or str(exc)
