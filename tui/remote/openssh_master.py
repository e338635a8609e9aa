"""The user's own OpenSSH master, honoured: where ~/.ssh/config gives a host a ControlPath (and
ControlMaster is not `no`) and a master answers `ssh -O check` there, gpudeck's remote commands run
through it (`ssh -S PATH -o ControlMaster=no HOST -- COMMAND`) instead of opening a connection.

The path's %tokens are expanded as OpenSSH does (ssh_tokens.py: %C %h %p %r %u %L %l %n %d %i %k).
Nothing is started here: where no master answers, gpudeck's own warm connection is used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
from typing import IO, Any, cast

import paramiko

from .ssh_config import SshTarget, ssh_dir
from .ssh_home import expand_tilde
from .ssh_tokens import TokenError, expand, tokens
from .warm_channel import WarmChannel


def control_path(target: SshTarget) -> str | None:
    """The expanded ControlPath the config gives target; None: none or `none`."""
    raw = target.raw.get("controlpath")  # used whatever ControlMaster says, as ssh uses a live one
    if not raw or raw[0].lower() == "none":
        return None
    import getpass

    values = tokens(
        target.hostname, target.port, target.user or getpass.getuser(), target.alias, target.host_key_alias
    )
    try:
        return expand_tilde(expand(raw[0], values, env=True))  # ~ as ssh reads it (ssh_home.py)
    except TokenError:
        return None


def openssh_transport(target: SshTarget) -> OpenSshTransport | None:
    path = control_path(target)
    ssh = shutil.which("ssh")
    if path is None or ssh is None or not _exists(path):
        return None
    ssh_argv = [ssh, *_config_option(), "-S", path]
    check = subprocess.run(
        [*ssh_argv, "-O", "check", "--", target.alias], capture_output=True, timeout=10, check=False
    )
    return OpenSshTransport(ssh_argv, target.alias) if check.returncode == 0 else None


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _config_option() -> list[str]:
    """`-F` the config gpudeck read, where GPUDECK_SSH_HOME moved it from where ssh looks."""
    config = ssh_dir() / "config"
    return ["-F", str(config)] if os.environ.get("GPUDECK_SSH_HOME") and config.exists() else []


class ProcessChannel(WarmChannel):
    """A channel that is an `ssh -S PATH` child: stdin, stdout, stderr and its exit status as they are."""

    def __init__(self, owner: OpenSshTransport) -> None:
        self.owner = owner
        self._buffers()
        self.proc: subprocess.Popen[bytes] | None = None

    def exec_command(self, command: str) -> None:
        o = self.owner
        argv = [*o.ssh_argv, "-o", "ControlMaster=no", "-T", "--", o.alias, command]
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
            )
        except OSError as exc:
            raise paramiko.SSHException(f"cannot run ssh: {exc}") from None
        threading.Thread(target=self._read_stderr, daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stderr(self) -> None:
        assert self.proc is not None
        stderr = cast(IO[bytes], self.proc.stderr)  # unbuffered: read() gives what is there
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: stderr.read(65536), b""):
                with self._cond:
                    self._err += chunk

    def _read_stdout(self) -> None:
        assert self.proc is not None
        stdout = cast(IO[bytes], self.proc.stdout)
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: stdout.read(65536), b""):
                self._stdout(chunk)
        self.exit_status = self.proc.wait()
        self.status_event.set()
        self._ended()

    def sendall(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        view = memoryview(data)
        while view:  # unbuffered: a pipe may take part of it
            view = view[self.proc.stdin.write(view) or 0 :]

    def shutdown_write(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()

    def close(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.terminate()


class OpenSshTransport:
    """paramiko.Transport's surface over an OpenSSH master."""

    def __init__(self, ssh_argv: list[str], alias: str) -> None:
        self.ssh_argv, self.alias = ssh_argv, alias  # `ssh [-F CONFIG] -S PATH`
        self.lost = False

    def open_session(self, *args: Any, **kwargs: Any) -> ProcessChannel:
        return ProcessChannel(self)

    def is_active(self) -> bool:
        return not self.lost

    def open_sftp_client(self) -> Any:
        raise paramiko.SSHException("no SFTP through an OpenSSH master here")  # deploy uploads over exec

    def open_channel(self, *args: Any, **kwargs: Any) -> Any:
        raise paramiko.SSHException("no forwarded channels through an OpenSSH master here")

    def close(self) -> None:
        pass
