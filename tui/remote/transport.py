"""A byte pipe to one agent's `serve`: a local subprocess now, an SSH exec channel later.

The agent client only needs readline/write/close, so every transport carries the same protocol.
"""

from __future__ import annotations

import os
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # agent_stream raises this module's TransportError
    import subprocess  # (imported where a local agent starts: a warm remote command starts none)

    from .agent_stream import AgentStream

Consumer = Callable[[bytes], None]  # the agent's bytes, in any chunking, in order
EndHandler = Callable[["str | None"], None]  # why the stream ended; None: it was closed here (or a clean EOF)


class TransportError(Exception):
    """The pipe to the agent could not be opened or broke; the message says why."""


class ConnectionCut(TransportError):
    """The connection was up (SSH logged in) and broke while the agent was being started: a cut,
    not a host that is down, so a follower retries it as it retries any later cut."""


class Transport(ABC):
    host: str

    @abstractmethod
    def open(self) -> None: ...

    @abstractmethod
    def readline(self) -> bytes:
        """One line with its newline; b'' at EOF."""

    def push_to(self, consumer: Consumer, on_end: EndHandler) -> bool:
        """Deliver the agent's bytes to consumer from the next open on, on the transport's own
        thread, instead of through readline; False: this transport only reads when asked."""
        return False

    def read_lines(self, size: int) -> bytes:
        """The next `size` bytes, whole lines (a `journal` push's body); fewer only at EOF.
        Line by line here; pipes override it with one read."""
        parts: list[bytes] = []
        got = 0
        while got < size:
            line = self.readline()
            if not line:
                break
            parts.append(line)
            got += len(line)
        return b"".join(parts)

    @abstractmethod
    def write(self, data: bytes) -> None: ...

    def open_stream(self, argv: list[str]) -> AgentStream:
        """A byte stream to the agent subcommand `argv` (agent_stream.py), on this connection."""
        raise TransportError(f"{self.host}: this connection carries no byte streams")

    @abstractmethod
    def close(self) -> None: ...


class LocalTransport(Transport):
    """`python -m remote_agent serve` as a child process: the same agent the SSH hosts run."""

    def __init__(self, agent_dir: Path, python: str = sys.executable, host: str = "local") -> None:
        self.host = host
        self.agent_dir = agent_dir
        self.python = python
        self.proc: subprocess.Popen[bytes] | None = None
        self._write_lock = threading.Lock()

    def open(self) -> None:
        import subprocess

        try:
            self.proc = subprocess.Popen(
                [self.python, "-m", "remote_agent", "serve", "--agent-dir", str(self.agent_dir)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=dict(os.environ),
            )
        except OSError as exc:
            raise TransportError(f"cannot start the local agent with {self.python}: {exc}") from None

    def open_stream(self, argv: list[str]) -> AgentStream:
        from .agent_stream import local_stream

        return local_stream(self.python, self.agent_dir, argv, env=dict(os.environ))

    def readline(self) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            return self.proc.stdout.readline()
        except (OSError, ValueError):
            return b""

    def read_lines(self, size: int) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            return self.proc.stdout.read(size)
        except (OSError, ValueError):
            return b""

    def write(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        with self._write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (OSError, ValueError) as exc:
                raise TransportError(f"local agent pipe closed: {exc}") from None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        # EOF on stdin ends a healthy agent; a frozen one must be killed before we touch stdout,
        # because closing it waits for the reader thread stuck in readline().
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        import subprocess

        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        try:
            if proc.stdout:
                proc.stdout.close()
        except OSError:
            pass
