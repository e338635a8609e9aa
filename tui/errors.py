"""gpudeck's refusals: one line for the user and a distinct exit code (documented in the README).

Raised by the core (tui/actions, the session) for the CLI and the TUI alike: the CLI prints the
line and exits with the code, the TUI shows the line in a notification.
"""

from __future__ import annotations

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NO_SUCH_JOB = 3
EXIT_HOST = 4
EXIT_HOSTKEY = 5  # a host key is unknown (run `gpudeck hosts trust NAME`) or has changed


class GpudeckError(Exception):
    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code
