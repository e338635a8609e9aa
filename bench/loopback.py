"""A private sshd on 127.0.0.1 and a gpudeck host `box` that reaches it, for the SSH benches.

Sets HOME (an ~/.ssh/config with `Host box`), GPUDECK_HOME (box's host key already trusted) and
PYTHONPATH (the agent runs this checkout) for this process and what it starts.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.sshd import Sshd, host_key_line, make_sshd  # noqa: E402


@dataclass
class Loopback:
    server: Sshd
    known: Path  # gpudeck's known_hosts
    agent_dir: Path  # box's agent dir


def loopback_host(root: Path, sshd_extra: list[str] | None = None) -> Loopback:
    server = make_sshd(root / "sshd", extra=sshd_extra)
    home = root / "user"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(server.client_key, home / ".ssh" / "id_ed25519")
    (home / ".ssh" / "config").write_text(
        f"Host box\n  HostName 127.0.0.1\n  Port {server.port}\n  User root\n"
    )
    # ssh (and gpudeck) read ~/.ssh from the passwd home unless GPUDECK_SSH_HOME says otherwise.
    os.environ.update(HOME=str(home), GPUDECK_SSH_HOME=str(home), GPUDECK_HOME=str(root / "gpudeck"))
    os.environ["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    os.environ.pop("SSH_AUTH_SOCK", None)
    (root / "gpudeck").mkdir()
    known = root / "gpudeck" / "known_hosts"
    known.write_text(host_key_line(server))
    agent_dir = root / "agent"

    from tui.hosts_file import HostEntry, add_host

    add_host(HostEntry(name="box", target="box", agent_dir=str(agent_dir), python=sys.executable))
    return Loopback(server, known, agent_dir)
