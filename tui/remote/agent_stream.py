"""A raw byte stream to one agent subcommand (`receive`, `send`…), beside `serve`'s JSON lines.

Bulk bytes (a code snapshot's files, a checkpoint pulled back) do not go through serve's request
stream: a megabyte there would hold up every ping and answer behind it. They take a channel of their
own on the host's SSH connection (no second login, no sftp or rsync on the host), or a pipe to a
local agent subprocess. Its protocol is the subcommand's; this only moves bytes and reports the end.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # imported when an SSH stream opens: the CLI's start imports this module
    import paramiko

from remote_agent.streaming import STREAM_MARKER

from .transport import TransportError

# Bulk transfers want a wider window than an interactive channel: the sender stalls each time
# paramiko's window fills (2 MiB by default) until the far side acknowledges.
WINDOW_SIZE = 64 << 20
MAX_PACKET = 1 << 15  # paramiko's largest: what OpenSSH's sshd accepts
CHATTER_MAX = 8 << 20  # as for serve's hello: past this much, it is not our agent


class AgentStream(ABC):
    """Write to the subcommand's stdin, read its stdout; `finish` waits for its exit."""

    @abstractmethod
    def write(self, data: bytes) -> None: ...

    @abstractmethod
    def end_input(self) -> None:
        """EOF on the subcommand's stdin: it has everything."""

    @abstractmethod
    def read(self, size: int) -> bytes:
        """Up to `size` bytes of its stdout; b'' at EOF."""

    def read_exactly(self, size: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < size:
            chunk = self.read(min(size - got, 1 << 20))
            if not chunk:
                raise TransportError(f"the agent's stream ended {size - got} bytes early{self._why()}")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def wait_ready(self, limit: int = CHATTER_MAX) -> None:
        """Skip what a login shell printed, up to the subcommand's marker (remote_agent/streaming.py);
        nothing may be written before it (the shell could read it)."""
        skipped = 0
        last = b""
        while True:
            line = self.readline()
            if line == STREAM_MARKER:
                return
            if not line:
                status, err = self.finish(timeout=5.0)
                said = err or last.decode("utf-8", "replace").strip()[:200]
                raise TransportError(
                    f"the agent's stream ended before it began (status {status}){': ' + said if said else ''}"
                )
            skipped += len(line)
            last = line if line.strip() else last
            if skipped > limit:
                raise TransportError("no agent stream: the remote printed over 8 MiB of something else")

    def readline(self, limit: int = 1 << 20) -> bytes:
        """One line with its newline (b'' at EOF): a subcommand's header or answer."""
        out = bytearray()
        while not out.endswith(b"\n") and len(out) < limit:
            byte = self.read(1)
            if not byte:
                break
            out += byte
        return bytes(out)

    @abstractmethod
    def finish(self, timeout: float = 60.0) -> tuple[int | None, str]:
        """(exit status or None when unknown, the last line it printed on stderr); closes it."""

    def _why(self) -> str:
        return ""

    def __enter__(self) -> AgentStream:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.finish(timeout=5.0)


class LocalStream(AgentStream):
    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        import subprocess  # here: the CLI's start imports this module, a warm command starts nothing

        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
            )
        except OSError as exc:
            raise TransportError(f"cannot start the local agent: {exc}") from None
        self._stderr: bytes | None = None

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()  # a protocol waits for answers: nothing may sit in our buffer
        except (OSError, ValueError) as exc:
            raise TransportError(f"the local agent stopped reading: {exc}{self._why()}") from None

    def end_input(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def read(self, size: int) -> bytes:
        stdout = cast(io.BufferedReader, self.proc.stdout)
        try:
            return stdout.read1(size)
        except (OSError, ValueError):
            return b""

    def finish(self, timeout: float = 60.0) -> tuple[int | None, str]:
        self.end_input()
        if self._stderr is None:
            import subprocess

            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            assert self.proc.stderr is not None
            with contextlib.suppress(OSError, ValueError):
                self._stderr = self.proc.stderr.read()
            for pipe in (self.proc.stdout, self.proc.stderr):
                with contextlib.suppress(OSError):
                    pipe and pipe.close()
        return self.proc.returncode, last_line(self._stderr or b"")

    def _why(self) -> str:
        status = self.proc.poll()
        return "" if status is None else f" (the agent exited with status {status})"


class SshStream(AgentStream):
    def __init__(self, transport: paramiko.Transport, command: str, timeout: float) -> None:
        try:
            self.chan = transport.open_session(
                window_size=WINDOW_SIZE, max_packet_size=MAX_PACKET, timeout=timeout
            )
            self.chan.settimeout(max(timeout, 60.0))
            self.chan.exec_command(command)
        except _ssh_errors() as exc:
            raise TransportError(f"cannot open a stream to the agent: {exc}") from None

    def write(self, data: bytes) -> None:
        try:  # a packet's worth at a time: paramiko's sendall copies the rest after each packet
            for i in range(0, len(data), MAX_PACKET):
                self.chan.sendall(data[i : i + MAX_PACKET])
        except _ssh_errors() as exc:
            raise TransportError(f"the stream to the agent broke: {exc}{self._why()}") from None

    def end_input(self) -> None:
        with contextlib.suppress(*_ssh_errors()):
            self.chan.shutdown_write()

    def read(self, size: int) -> bytes:
        try:
            data: bytes = self.chan.recv(size)
        except TimeoutError:
            raise TransportError("the agent's stream went silent") from None
        except _ssh_errors():
            return b""
        return data

    def finish(self, timeout: float = 60.0) -> tuple[int | None, str]:
        self.end_input()
        err = b""
        status: int | None = None
        with contextlib.suppress(Exception):
            if self.chan.status_event.wait(timeout):
                status = self.chan.exit_status
            while self.chan.recv_stderr_ready():
                err += self.chan.recv_stderr(65536)
        with contextlib.suppress(Exception):
            self.chan.close()
        return status, last_line(err)

    def _why(self) -> str:
        if self.chan.exit_status_ready():
            return f" (the agent exited with status {self.chan.exit_status})"
        return ""


def _ssh_errors() -> tuple[type[BaseException], ...]:
    import paramiko

    return (OSError, EOFError, paramiko.SSHException)


def last_line(err: bytes) -> str:
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:300] if lines else ""


def local_stream(
    python: str, agent_dir: Path, argv: list[str], env: dict[str, str] | None = None
) -> LocalStream:
    stream = LocalStream([python, "-m", "remote_agent", *argv, "--agent-dir", str(agent_dir)], env=env)
    stream.wait_ready()
    return stream


def ssh_stream(
    transport: Any, python: str, agent: str, agent_dir: str, argv: list[str], timeout: float
) -> SshStream:
    """`exec PY AGENT ARGV… --agent-dir D`, every token quoted: the login shell sees only literals."""
    command = "exec " + shlex.join([python, agent, *argv, "--agent-dir", agent_dir])
    stream = SshStream(transport, command, timeout)
    stream.wait_ready()
    return stream
