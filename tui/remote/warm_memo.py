"""What a warm master remembers for later commands, and how they name it (tui/remote/warm_fast.py).

Keys carry this client's agent build (`agent_stamp`), so an upgraded gpudeck never takes the agent a
master remembers from before for its own, and starts (and shares) a serve of its own build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from ..hosts_file import HostEntry
from ..settings import SshSettings

if TYPE_CHECKING:
    from .deploy import Deployed
    from .warm_channel import WarmTransport

_stamp: list[str] = []


def agent_stamp() -> str:
    """This client's agent build, cheaply: its sources' names, sizes and mtimes (no read, no zip),
    so an upgraded agent is never taken for the one a master remembers."""
    if not _stamp:
        spec = find_spec("remote_agent")
        root = os.path.dirname(spec.origin) if spec and spec.origin else ""
        h = hashlib.sha256()
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".md")):
                    st = os.stat(os.path.join(folder, name))
                    h.update(f"{folder[len(root) :]}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _stamp.append(h.hexdigest()[:16])
    return _stamp[0]


def memo_key(parts: tuple[Any, ...]) -> str:
    """A master memo's key for this host and this agent build."""
    return json.dumps([*parts, agent_stamp()])


def fast_key(entry: HostEntry, settings: SshSettings) -> str:
    return "fast:" + memo_key(
        (entry.name, entry.target, entry.python, entry.agent_dir, settings.alive_timeout)
    )


def serve_line(python: str, agent: str, agent_dir: str, heartbeat: float, sessions: bool = False) -> str:
    """`exec PY AGENT serve …`, every token quoted: the login shell only ever sees literals."""
    argv = [python, agent, "serve", "--agent-dir", agent_dir, "--heartbeat", f"{heartbeat:g}"]
    return "exec " + shlex.join([*argv, *(["--sessions"] if sessions else [])])


def heartbeat_for(alive_timeout: float) -> float:
    return max(0.2, alive_timeout / 4)


def remember_fast_path(
    transport: WarmTransport,
    entry: HostEntry,
    settings: SshSettings,
    deployed: Deployed,
    alive_timeout: float,
) -> None:
    """What the next command's fast path needs, kept by the master (a full start just learnt it)."""
    where = {"python": deployed.python, "agent": deployed.agent, "agent_dir": deployed.agent_dir}
    transport.remember(fast_key(entry, settings), {**where, "alive_timeout": alive_timeout})
