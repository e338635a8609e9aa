"""A host's connection kept warm across commands: find it, start it, end it.

`connection()` gives the agent's transport a Connection whose channels ride on a connection already
up: the user's own OpenSSH master when ~/.ssh/config names a ControlPath that answers, else gpudeck's
master (warm_master.py), started by the first command and left running `[ssh] persist` seconds.
None means: connect directly, as without this (persist 0, or a master could not connect without
asking something: an unknown host key, a passphrase). A stale master (its socket there but nobody
answering, or its SSH connection gone) is replaced without a word.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from pathlib import Path

from ..hosts_file import HostEntry
from ..settings import SshSettings
from ..ssh_persist import effective
from . import warm_paths
from .ssh_connect import Connection, SshError, resolve_target
from .transport import TransportError
from .warm_channel import WarmTransport, query

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # where `tui` is importable from


def _alias(entry: HostEntry) -> str | None:
    alias = entry.extra.get("host_key_alias")
    return alias if isinstance(alias, str) and alias else None


def connection(entry: HostEntry, settings: SshSettings) -> Connection | None:
    try:
        persist = effective(settings.persist)
        target, _hops = resolve_target(entry.target, entry.identity_file, _alias(entry))
    except (ValueError, SshError) as exc:
        raise TransportError(str(exc)) from None
    from .openssh_master import openssh_transport

    openssh = openssh_transport(target)
    if openssh is not None:
        return Connection(transport=openssh, target=target)
    if persist <= 0:
        return None
    path = warm_paths.socket_path(entry)
    answer = query(path, {"op": "check"})
    if answer is not None and answer.get("active"):
        return Connection(transport=WarmTransport(path), target=target)
    if answer is not None:  # its SSH connection is gone and it has not noticed yet: end it
        query(path, {"op": "exit"})
    if not start(entry, settings, persist, path):
        return None
    return Connection(transport=WarmTransport(path), target=target)


def start(entry: HostEntry, settings: SshSettings, persist: float, path: Path) -> bool:
    """Start a master for entry and wait for its one line; False: connect directly instead.
    A host that cannot be reached raises TransportError with the line a direct connect would give."""
    config = {
        "name": entry.name,
        "target": entry.target,
        "identity_file": entry.identity_file,
        "host_key_alias": _alias(entry),
        "timeout": settings.connect_timeout,
        "persist": persist,
        "socket": str(path),
    }
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    log = os.open(warm_paths.log_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tui.remote.warm_master", json.dumps(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # no terminal signals (Ctrl-C in the command) reach it
            cwd="/",
            env=env,
        )
    except OSError:
        return False
    finally:
        os.close(log)
    assert proc.stdout is not None
    # Its connect has its own timeout per hop; this is only a backstop for a master that hangs.
    ready, _, _ = select.select([proc.stdout], [], [], settings.connect_timeout * 3 + 10)
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    try:
        report = json.loads(line)
    except ValueError:
        with contextlib.suppress(OSError):
            proc.kill()
        return False
    if report.get("ok"):
        return True
    if report.get("kind") == "unreachable":
        raise TransportError(str(report.get("error")))
    return False


def disconnect(entry: HostEntry) -> bool:
    """End entry's master; True if one was running."""
    path = warm_paths.socket_path(entry)
    answered = query(path, {"op": "exit"}) is not None
    if not answered:
        with contextlib.suppress(OSError):
            os.unlink(path)  # a dead master's socket
    return answered


def is_warm(entry: HostEntry) -> bool:
    """entry has a live master now."""
    answer = query(warm_paths.socket_path(entry), {"op": "check"})
    return bool(answer and answer.get("active"))
