"""What a sync asks for (no IO here): the CLI's flags, hosts.toml's `sync`, and the launch's."""

from __future__ import annotations

import re
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


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)B?", re.IGNORECASE)
_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def parse_size(value: object, label: str = "--max-file-size") -> int:
    """`100M`, `2G`, `500K`, `1048576` → bytes (decimal units, as the limit is said: 100 MB)."""
    text = str(value).strip()
    match = _SIZE.fullmatch(text)
    if not match or isinstance(value, bool):
        raise SyncError(f"{label} {text!r}: a size such as 100M, 2G or 500K")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def host_sync_settings(host: str, extra: dict[str, object]) -> tuple[str | None, int | None]:
    """hosts.toml's `sync` (a directory synced by every launch there) and `sync_max_file_size`."""
    from ..hosts_file import hosts_path

    where = f"{hosts_path()}: [hosts.{host}]"
    directory = extra.get("sync")
    if directory is not None and not (isinstance(directory, str) and directory):
        raise SyncError(f'{where} sync: expected a directory such as "."')
    size = extra.get("sync_max_file_size")
    limit = parse_size(size, f"{where} sync_max_file_size") if size is not None else None
    return directory, limit
