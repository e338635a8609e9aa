"""The CLI's failures: one line for the user and a distinct exit code (documented in the README)."""

from __future__ import annotations

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NO_SUCH_JOB = 3
EXIT_HOST = 4
EXIT_HOSTKEY = 5  # a host key is unknown (run `gpudeck hosts trust NAME`) or has changed


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code
