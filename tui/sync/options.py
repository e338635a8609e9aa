"""What a sync asks for (no IO here): the CLI's flags, hosts.toml's `sync`, and the launch's."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EXIT_USAGE, GpudeckError

DEFAULT_MAX_FILE_SIZE = 100_000_000  # bytes (100 MB)


class SyncError(GpudeckError):
    """The tree cannot be sent as it is (a file too big, a link outside); one line naming it."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message, code)


@dataclass(frozen=True)
class SyncOptions:
    directory: str = "."
    include_git: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    include: tuple[str, ...] = ()  # files sent whatever the ignore rules and the size limit
