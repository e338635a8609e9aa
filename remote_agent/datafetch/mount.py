"""`:mount`: the prefix mounted at PATH by the host's s3fs or rclone, with the host's own credentials
(~/.passwd-s3fs, rclone's env auth, an instance role): the one mode in which the store is reached
with credentials that live on the host. The mount outlives the job (a later job finds it mounted)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

from ..spec import DataSource

TOOLS = ("s3fs", "rclone")
MOUNT_WAIT = 60.0


class MountError(Exception):
    pass


def mount_argv(tool: str, path: str, source: DataSource, target: Path) -> List[str]:
    bucket, _, prefix = source.url[len("s3://") :].partition("/")
    if os.path.basename(tool) == "s3fs":
        argv = [path, "%s:/%s" % (bucket, prefix.strip("/")) if prefix else bucket, str(target)]
        if source.endpoint_url:
            argv += ["-o", "url=%s" % source.endpoint_url, "-o", "use_path_request_style"]
        return argv
    argv = [path, "mount", ":s3:%s/%s" % (bucket, prefix), str(target), "--daemon", "--s3-env-auth"]
    if source.endpoint_url:
        argv += ["--s3-provider", "Other", "--s3-endpoint", source.endpoint_url]
    return argv


def find_tool() -> Optional[str]:
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            return found
    return None


def mount(source: DataSource, target: Path) -> str:
    """Mounts (or finds mounted) and says how, in one line; MountError naming what is missing."""
    if os.path.ismount(str(target)):
        return "already mounted at %s" % target
    tool = find_tool()
    if tool is None:
        raise MountError(
            "data %s:mount: neither s3fs nor rclone is installed on this host (install one, or drop :mount to copy)"
            % source.url
        )
    os.makedirs(str(target), exist_ok=True)
    argv = mount_argv(os.path.basename(tool), tool, source, target)
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=MOUNT_WAIT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MountError("data %s:mount: %s failed: %s" % (source.url, os.path.basename(tool), exc)) from None
    if done.returncode != 0 or not os.path.ismount(str(target)):
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise MountError(
            "data %s:mount: %s failed (exit %d): %s"
            % (source.url, os.path.basename(tool), done.returncode, lines[-1] if lines else "not mounted")
        )
    return "mounted at %s by %s" % (target, os.path.basename(tool))
