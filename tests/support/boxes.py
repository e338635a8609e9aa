"""Two SSH hosts for multi-node tests: one real sshd reached through two ~/.ssh/config aliases,
each with its own agent dir; `unreachable` points an alias at a closed port (its host "down")."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome, free_port

BOXES = ("box-a", "box-b")
VENV_FIRST = f"export PATH={Path(sys.executable).parent}:$PATH"  # python3 = this venv's (torch)


def ssh_config(ssh_home: SshHome, down: tuple[str, ...] = ()) -> None:
    ports = {h: free_port() if h in down else ssh_home.server.port for h in BOXES}
    ssh_home.write_ssh_config(
        "".join(f"Host {h}\n  HostName 127.0.0.1\n  Port {ports[h]}\n  User root\n" for h in BOXES)
    )


def two_boxes(ssh_home: SshHome, setup_b: str = VENV_FIRST) -> None:
    ssh_config(ssh_home)
    ssh_home.trust()
    ssh_home.add_host("box-a", "box-a", agent_dir=str(agent_dir(ssh_home, "box-a")), setup=[VENV_FIRST])
    ssh_home.add_host("box-b", "box-b", agent_dir=str(agent_dir(ssh_home, "box-b")), setup=[setup_b])


def agent_dir(ssh_home: SshHome, box: str) -> Path:
    return ssh_home.agent_dir / box


def kill_boxes_jobs(ssh_home: SshHome) -> None:
    for box in BOXES:
        kill_all_jobs(agent_dir(ssh_home, box))
