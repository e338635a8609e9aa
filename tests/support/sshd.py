"""A private OpenSSH server on 127.0.0.1 for tests: temp host key, one authorized key, sftp.

The remote side's HOME is a directory of our own (sshd's `SetEnv`), with a small `.profile` and a
`.bashrc` that prints junk: the client must skip it, and this machine's real ~/.bashrc (a pyenv
rehash that can stall on a stale lock) never runs in a test.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
JUNK = "welcome to the test box (junk a .bashrc prints)"


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A free port below the kernel's ephemeral range. bind(0) would hand out a port from that range, where
    every outgoing connection on the machine (the other worker's SSH, HTTP…) also takes its local port:
    one could take it between this pick and the server's bind."""
    floor, pick = _ephemeral_floor(), random.SystemRandom()
    for _ in range(200):
        port = pick.randrange(10000, max(floor, 10001))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(path), "-C", "gpudeck-test"], check=True
    )
    return path


@dataclass
class Sshd:
    root: Path
    port: int
    host_key: Path
    client_key: Path
    remote_home: Path
    proc: subprocess.Popen[bytes] | None = None
    extra: list[str] = field(default_factory=list)
    login_shell: str | None = (
        None  # the user's shell as sshd sees it (a private /etc/passwd), else the real one
    )

    @property
    def config(self) -> Path:
        return self.root / "sshd_config"

    def write_config(self) -> None:
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"PidFile {self.root / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            "AllowTcpForwarding yes",
            "Subsystem sftp internal-sftp",
            f"SetEnv HOME={self.remote_home} GPUDECK_TEST_SSHD={self.port}",
            "MaxSessions 64",
            "MaxStartups 64:30:128",
            "LogLevel ERROR",
        ]
        # sshd takes a keyword's first value: an extra line replaces the default one, not follows it.
        overridden = {line.split()[0].lower() for line in self.extra if line.strip()}
        lines = [line for line in lines if line.split()[0].lower() not in overridden] + self.extra
        self.config.write_text("\n".join(lines) + "\n")

    def start(self) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir, needed as root
        self.write_config()
        log = open(self.root / "sshd.log", "ab")  # noqa: SIM115 - lives as long as the server
        argv = [SSHD, "-D", "-e", "-f", str(self.config)]
        if self.login_shell:
            argv = with_login_shell(self.root, self.login_shell, argv)
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"sshd did not start: {(self.root / 'sshd.log').read_text()[-2000:]}"
                    ) from None
                time.sleep(0.01)

    def connection_pids(self) -> list[int]:
        """The per-connection sshd processes (children of the listener)."""
        if self.proc is None:
            return []
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def session_tree(self) -> list[int]:
        """Every sshd process of every connection (monitor and session child), not the commands."""
        pids = []
        todo = self.connection_pids()
        while todo:
            pid = todo.pop()
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith("sshd"):
                pids.append(pid)
                out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
                todo += [int(p) for p in out.split()]
        return pids

    def cut(self) -> int:
        """Kill every open connection (the listener stays): what a network cut looks like to both ends."""
        pids = self.connection_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def stop(self) -> None:
        self.cut()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def with_login_shell(root: Path, shell: str, argv: list[str]) -> list[str]:
    """argv run in its own mount namespace where /etc/passwd gives this user `shell`: sshd starts
    every session through the passwd shell, and the machine's real passwd must not change."""
    me = os.getuid()
    lines = []
    for line in Path("/etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if len(fields) == 7 and fields[2] == str(me):
            fields[6] = shell
        lines.append(":".join(fields))
    passwd = root / "passwd"
    passwd.write_text("\n".join(lines) + "\n")
    passwd.chmod(0o644)
    return ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/passwd && exec "$@"', str(passwd), *argv]


def can_fake_login_shell() -> bool:
    """A private mount namespace needs root (CAP_SYS_ADMIN); elsewhere those tests skip."""
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return os.geteuid() == 0 and probe.returncode == 0


def make_sshd(root: Path, extra: list[str] | None = None, login_shell: str | None = None) -> Sshd:
    root.mkdir(parents=True, exist_ok=True)
    host_key = keygen(root / "host_ed25519")
    client_key = root / "client_ed25519"
    if not client_key.exists():
        keygen(client_key)
    (root / "authorized_keys").write_text((root / "client_ed25519.pub").read_text())
    remote_home = root / "remote-home"
    remote_home.mkdir(exist_ok=True)
    (remote_home / ".profile").write_text(
        '[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\nexport GPUDECK_TEST_REMOTE_PROFILE=read\n'
    )
    (remote_home / ".bashrc").write_text(f"echo '{JUNK}'\necho '{{\"not\": \"the agent\"}}'\n")
    server = Sshd(
        root=root,
        port=free_port(),
        host_key=host_key,
        client_key=client_key,
        remote_home=remote_home,
        extra=list(extra or []),
        login_shell=login_shell,
    )
    server.start()
    return server


def host_key_line(server: Sshd, name: str = "127.0.0.1") -> str:
    """The known_hosts line for this server's key, as `ssh-keyscan` would write it."""
    kind, blob = server.host_key.with_suffix(".pub").read_text().split()[:2]
    return f"[{name}]:{server.port} {kind} {blob}\n"


# -- pytest fixtures (import them into a test module: `from tests.support.sshd import sshd, ssh_home`) --

import shutil  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    if not os.path.exists(SSHD):
        pytest.skip("openssh-server is not installed (apt-get install openssh-server; .ci/run does)")
    server = make_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@dataclass
class SshHome:
    """One test's client side: HOME with ~/.ssh (key, config), GPUDECK_HOME, a remote agent dir."""

    home: Path
    gpudeck_home: Path
    agent_dir: Path
    server: Sshd

    @property
    def ssh_dir(self) -> Path:
        return self.home / ".ssh"

    def write_ssh_config(self, text: str) -> None:
        (self.ssh_dir / "config").write_text(text)

    def trust(self, server: Sshd | None = None) -> None:
        with open(self.gpudeck_home / "known_hosts", "a") as f:
            f.write(host_key_line(server or self.server))

    def add_host(self, name: str = "box", target: str = "box", **fields: object) -> None:
        from tui.hosts_file import HostEntry, add_host

        fields.setdefault("agent_dir", str(self.agent_dir))
        add_host(HostEntry(name=name, target=target, **fields))  # type: ignore[arg-type]

    def ssh_settings(
        self, alive_timeout: float = 2.0, backoff_initial: float = 0.1, backoff_max: float = 0.5
    ) -> None:
        (self.gpudeck_home / "config.toml").write_text(
            f"[ssh]\nalive_timeout = {alive_timeout}\nbackoff_initial = {backoff_initial}\nbackoff_max = {backoff_max}\n"
        )


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real ssh-agent of this test's own (the fixture ssh_home hides the machine's)."""
    from tests.support.waiting import wait_for

    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(sock.exists, timeout=10, what="ssh-agent's socket")
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        yield sock
    finally:
        proc.kill()
        proc.wait()


def ssh_verdict(ssh_home: SshHome, target: str = "box") -> str:
    """What the real ssh says of the server's key with this test's ~/.ssh (config, known_hosts, key):
    ok, changed or unknown (refused otherwise)."""
    result = subprocess.run(
        [
            "ssh",
            "-F",
            str(ssh_home.ssh_dir / "config"),
            "-o",
            f"UserKnownHostsFile={ssh_home.ssh_dir / 'known_hosts'}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-i",
            str(ssh_home.ssh_dir / "id_ed25519"),
            target,
            "true",
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    if result.returncode == 0:
        return "ok"
    return "changed" if "HAS CHANGED" in result.stderr else "unknown"


def serve_pids(agent_dir: Path) -> list[int]:
    """Live `serve` processes for this agent dir (a leak check after cuts)."""
    from tests.support.jobs import pids_with

    return [p for p in pids_with(str(agent_dir)) if b"serve" in _cmdline(p)]


def _cmdline(pid: int) -> bytes:
    """b"" for a process that ended since it was listed (a serve exiting as the test ends)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture
def ssh_home(sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SshHome]:
    from tests.support.cleanup import kill_all_jobs

    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(sshd.client_key, home / ".ssh" / "id_ed25519")
    os.chmod(home / ".ssh" / "id_ed25519", 0o600)
    (home / ".profile").write_text("export GPUDECK_TEST_LOGIN_PROFILE=read\n")
    (home / ".ssh" / "config").write_text(
        f"Host box\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User root\n"
    )
    gh = tmp_path / "gpudeck"
    gh.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUDECK_SSH_HOME", str(home))  # ssh reads the passwd home: ours
    monkeypatch.setenv("GPUDECK_HOME", str(gh))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # the machine's agent must not answer for us
    monkeypatch.setenv(
        "GPUDECK_SSH_PERSIST", "0"
    )  # no warm connection outliving a test (test_warm_* turn it on)
    env = SshHome(home=home, gpudeck_home=gh, agent_dir=tmp_path / "remote-agent", server=sshd)
    yield env
    for agent_dir in (env.agent_dir, gh / "local-agent"):
        kill_all_jobs(agent_dir)
        for pid in serve_pids(agent_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
