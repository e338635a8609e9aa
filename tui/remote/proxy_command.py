"""ProxyCommand run as ssh runs it, `$SHELL -c "exec COMMAND"`, whose end is noticed at once.

paramiko's ProxyCommand splits the line itself (no redirections, quotes or variables) and, when the
command exits, spins on its empty stdout until the banner timeout, then reports a timeout. Here the
end of its output is a ProxyCommandFailure naming the exit status and its last line of stderr, whether we notice it on
reading or on writing.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import subprocess

import paramiko
from paramiko.ssh_exception import ProxyCommandFailure


class ProxyCommandEnded(ProxyCommandFailure):
    """paramiko's failure, said as what happened: its text says "returned nonzero exit status" even
    for a command that exited with status 0."""

    def __str__(self) -> str:
        return f"ProxyCommand ({self.command}) ended: {self.error}"


class ShellProxyCommand(paramiko.ProxyCommand):
    def __init__(self, command: str) -> None:
        shell = os.environ.get("SHELL") or "/bin/sh"
        super().__init__(shlex.join([shell, "-c", f"exec {command}"]))
        self.command = command

    def send(self, content: bytes) -> int:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(content)
        except OSError:  # it died before reading what we sent (our banner goes first): say how it ended
            raise ProxyCommandEnded(self.command, self._ended()) from None
        return len(content)

    def recv(self, size: int) -> bytes:
        out = self.process.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], self.timeout)
        if not ready:
            raise TimeoutError()
        try:
            data = os.read(out.fileno(), size)  # a short read is fine: the packetizer asks again
        except OSError as exc:
            raise ProxyCommandEnded(self.command, exc.strerror or str(exc)) from None
        if not data:
            raise ProxyCommandEnded(self.command, self._ended())
        return data

    def _ended(self) -> str:
        try:
            status: int | None = self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            status = None  # it closed its stdout but lives on
        said = b""
        err = self.process.stderr
        if err is not None and select.select([err], [], [], 0.5)[0]:
            with contextlib.suppress(OSError):
                said = os.read(err.fileno(), 4096)
        last = (said.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:200]
        how = "closed its output" if status is None else f"exited with status {status}"
        return f"it {how}{': ' + last if last else ''}"

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
