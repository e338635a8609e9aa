"""Issue 33, connections kept warm: the first command to a host leaves an SSH connection up
(tui/remote/warm_master.py) and later commands run on it; each connection to sshd is counted by
the ProxyCommand relay it goes through (tests/support/relay.py writes one line per connection)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import alive
from tests.support.sshd import Sshd, SshHome
from tests.support.waiting import wait_for

RELAY = Path(__file__).resolve().parent / "support" / "relay.py"


@dataclass
class Warm:
    home: SshHome
    marker: Path

    @property
    def connections(self) -> int:
        """TCP connections made to sshd so far."""
        return len(self.marker.read_text().splitlines()) if self.marker.exists() else 0

    @property
    def run_dir(self) -> Path:
        """Where the log is (the socket too, unless its path would pass 107 bytes: then under /tmp)."""
        return self.home.gpudeck_home / "run"

    def sockets(self) -> list[Path]:
        from tui.hosts_file import load_hosts
        from tui.remote.warm_paths import socket_path

        path = socket_path(load_hosts()["box"])
        return [path] if path.exists() else []

    def master_pid(self) -> int | None:
        from tui.remote.warm_channel import query

        socks = self.sockets()
        answer = query(socks[0], {"op": "check"}) if socks else None
        return int(answer["pid"]) if answer else None

    def persist(self, value: str) -> None:
        (self.home.gpudeck_home / "config.toml").write_text(f"[ssh]\npersist = {value}\n")


@pytest.fixture
def warm(ssh_home: SshHome, sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Warm]:
    monkeypatch.delenv("GPUDECK_SSH_PERSIST")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # the sockets under GPUDECK_HOME/run
    marker = tmp_path / "connections"
    ssh_home.write_ssh_config(
        f"Host box\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User root\n"
        f"  ProxyCommand {sys.executable} {RELAY} %h %p {marker}\n"
    )
    ssh_home.trust()
    ssh_home.add_host()
    w = Warm(ssh_home, marker)
    w.persist('"10m"')
    yield w
    pid = w.master_pid()
    gpudeck("hosts", "disconnect")
    if pid is not None and alive(pid):
        os.kill(pid, signal.SIGKILL)


def ok(*args: str) -> subprocess.CompletedProcess[str]:
    done = gpudeck(*args)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow  # several CLI runs, each over SSH
def test_three_verbs_share_one_connection(warm: Warm) -> None:
    job = json.loads(ok("run", "--host", "box", "--json", "--", "echo", "warm hello").stdout)["id"]
    wait_for(lambda: "warm hello" in ok("logs", job).stdout, timeout=30, what="the job's output")
    assert job in ok("ps", "--all").stdout
    assert warm.connections == 1  # three verbs (and the logs polls), one TCP connection and one login
    assert warm.master_pid() is not None


def as_nobody(directory: Path, name: str) -> subprocess.CompletedProcess[str]:
    """Connect to directory/name as uid 65534 and print what the master says first."""
    probe = (
        "import os, socket, sys\n"
        f"os.chdir({str(directory)!r}); os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "print(s.recv(4096)[5:].decode())\n"  # the master speaks first: its refusal, then it hangs up
    )
    return subprocess.run([sys.executable, "-c", probe, name], capture_output=True, text=True, timeout=30)


@pytest.mark.slow  # several CLI runs, each over SSH
def test_the_socket_is_private_and_refused_to_another_user(warm: Warm) -> None:
    ok("ps")
    (sock,) = warm.sockets()
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert "PermissionError" in as_nobody(sock.parent, sock.name).stderr  # the modes keep others out
    # Open the directory to others (as a mistake would) so only the master's own check is left.
    sock.parent.chmod(0o711)
    sock.chmod(0o666)
    seen = as_nobody(sock.parent, sock.name)
    sock.parent.chmod(0o700)
    assert seen.returncode == 0, seen.stderr
    assert "refused: uid 65534" in seen.stdout
    assert "refused a connection from uid 65534" in (warm.run_dir / "warm.log").read_text()
    assert stat.S_IMODE((warm.run_dir / "warm.log").stat().st_mode) == 0o600
    ok("ps")  # and it still serves its own user
    assert warm.connections == 1


@pytest.mark.slow  # several CLI runs, each over SSH
def test_a_cut_connection_is_replaced_without_a_word(warm: Warm, sshd: Sshd) -> None:
    ok("ps")
    first = warm.master_pid()
    assert first is not None
    assert sshd.cut() >= 1  # the master's TCP connection dies under it
    done = ok("ps")
    assert done.stderr == ""
    second = warm.master_pid()
    assert second is not None and second != first
    assert warm.connections == 2
    wait_for(lambda: not alive(first), timeout=30, what="the cut master's exit")


@pytest.mark.slow  # several CLI runs, each over SSH
def test_a_stale_socket_is_replaced_without_a_word(warm: Warm) -> None:
    ok("ps")
    first = warm.master_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)  # its socket file stays behind, with nobody listening
    wait_for(lambda: not alive(first), timeout=30, what="the master's death")
    assert len(warm.sockets()) == 1
    done = ok("ps")
    assert done.stderr == ""
    second = warm.master_pid()
    assert second is not None and second != first


@pytest.mark.slow  # several CLI runs, each over SSH
def test_an_idle_master_ends_by_itself(warm: Warm) -> None:
    warm.persist("1")
    ok("ps")
    log = (warm.run_dir / "warm.log").read_text()  # it may be gone already: its log line names it
    # (under load a gap of 1 s may fall inside the command itself: then a second one served the rest)
    pids = [int(line.split("[")[1].split("]")[0]) for line in log.splitlines() if "persisting 1 s" in line]
    assert pids
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=30, what="the idle master's exit")
    assert warm.sockets() == []
    assert "idle for 1 s" in (warm.run_dir / "warm.log").read_text()


@pytest.mark.slow  # several CLI runs, each over SSH
def test_hosts_disconnect_ends_it(warm: Warm) -> None:
    ok("ps")
    pid = warm.master_pid()
    assert pid is not None
    assert json.loads(ok("hosts", "disconnect", "box", "--json").stdout) == [
        {"host": "box", "was_warm": True}
    ]
    wait_for(lambda: not alive(pid), timeout=30, what="the master's exit")
    assert warm.sockets() == []
    assert ok("hosts", "disconnect").stdout == "box: no warm connection\n"
    assert gpudeck("hosts", "disconnect", "nosuch").returncode == 2


@pytest.mark.slow  # several CLI runs, each over SSH
def test_persist_zero_never_leaves_one(warm: Warm) -> None:
    warm.persist("0")
    ok("ps")
    ok("ps")
    assert warm.sockets() == []
    assert warm.connections == 2  # each command its own connection, as before


def test_a_bad_persist_is_one_line_naming_the_field(warm: Warm) -> None:
    warm.persist('"ten minutes"')
    done = gpudeck("ps")
    assert done.returncode == 2
    assert "config.toml:2: [ssh] persist: expected seconds" in done.stderr
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.slow  # an OpenSSH master and a CLI run
def test_the_users_own_openssh_master_is_used(warm: Warm) -> None:
    short = Path(tempfile.mkdtemp(prefix="ctl-", dir="/tmp"))  # ssh refuses a socket path past 104 bytes
    control = short / "%r@%h:%p"
    config = warm.home.ssh_dir / "config"
    config.write_text(config.read_text() + f"  ControlPath {control}\n")
    ssh = ["ssh", "-F", str(config), "-i", str(warm.home.ssh_dir / "id_ed25519"), "-o", "BatchMode=yes"]
    ssh += ["-o", f"UserKnownHostsFile={warm.home.gpudeck_home / 'known_hosts'}"]
    subprocess.run([*ssh, "-M", "-f", "-N", "box"], check=True, timeout=30, stdin=subprocess.DEVNULL)
    try:
        assert warm.connections == 1
        done = ok("ps")
        assert done.stderr == ""
        ok("ps")
        assert warm.connections == 1  # both ran through the OpenSSH master: no connection of gpudeck's
        assert warm.sockets() == []  # and no master of gpudeck's either
    finally:
        subprocess.run([*ssh, "-O", "exit", "box"], capture_output=True, timeout=30)
        shutil.rmtree(short, ignore_errors=True)
