"""Two (or three) SSH hosts for multi-node tests: one real sshd reached through ~/.ssh/config
aliases, each with its own agent dir; `down` points an alias at a closed port (its host "down")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome, free_port

BOXES = ("box-a", "box-b", "box-c")
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


def three_boxes(ssh_home: SshHome, extra: dict[str, dict[str, Any]] | None = None) -> None:
    """box-a, box-b and box-c, each with hosts.toml fields of its own in `extra` (provider, price…)."""
    import tomlkit

    from tui.hosts_file import hosts_path

    two_boxes(ssh_home)
    ssh_home.add_host("box-c", "box-c", agent_dir=str(agent_dir(ssh_home, "box-c")), setup=[VENV_FIRST])
    doc = tomlkit.parse(hosts_path().read_text())
    for box, fields in (extra or {}).items():
        for key, value in fields.items():
            doc["hosts"][box][key] = value  # type: ignore[index]
    hosts_path().write_text(tomlkit.dumps(doc))


def agent_dir(ssh_home: SshHome, box: str) -> Path:
    return ssh_home.agent_dir / box


def kill_boxes_jobs(ssh_home: SshHome) -> None:
    for box in BOXES:
        kill_all_jobs(agent_dir(ssh_home, box))
