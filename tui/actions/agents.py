"""What the actions need of the hosts' agents: one blocking request, answered or refused in one line.

The CLI's Session and the TUI's connection service both provide it, so an action behaves the same
whoever asks. Implementations raise GpudeckError (a host down, an agent's refusal) with the message
the user sees.
"""

from __future__ import annotations

from typing import Any, Protocol


class ByteStream(Protocol):
    """A byte stream to one agent subcommand (tui/remote/agent_stream.py implements it): the core
    sees only this, never a transport."""

    def write(self, data: bytes) -> None: ...

    def end_input(self) -> None: ...

    def read(self, size: int) -> bytes: ...

    def read_exactly(self, size: int) -> bytes: ...

    def readline(self, limit: int = 1 << 20) -> bytes: ...

    def finish(self, timeout: float = 60.0) -> tuple[int | None, str]: ...


class Agents(Protocol):
    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        """Send `op` to `host`'s agent and return its answer; blocks (call from a worker)."""
        ...

    def stream(self, host: str, argv: list[str]) -> ByteStream:
        """A byte stream to the agent subcommand `argv` on `host`'s connection (bulk bytes: code
        going up, results coming back); blocks (call from a worker)."""
        ...

    def hosts(self) -> list[str]:
        """Every host's name, `local` first."""
        ...

    def notice(self, line: str) -> None:
        """Tell the user one line that is not an error (the CLI: stderr; the TUI: a notification)."""
        ...
