"""policies.toml edited by the controller: a host it launched for a pool joins `[pool.NAME] hosts`,
so a restarted `policy run` (or the TUI) counts it as the pool's. tomlkit edits the parsed document,
so the user's comments, order and layout stay as written; the file is replaced atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomlkit

from ..tomlfile import write_atomic
from .rules import PolicyError, parse


def add_pool_host(path: Path, pool: str, host: str) -> bool:
    """Append `host` to the pool's hosts; False when it is already there. PolicyError (one line naming
    the file and the pool) when the file cannot be read, edited or written."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit's parse errors have no common public base
        raise PolicyError(f"{path}: not valid TOML: {exc}") from None
    hosts = _pool_hosts(doc, pool)
    if hosts is None:
        raise PolicyError(
            f"{path}: [pool.{pool}] hosts: not a list of host names any more (edited meanwhile?)"
        )
    if host in hosts:
        return False
    hosts.append(host)
    new = tomlkit.dumps(doc)
    parse(new, path)  # never write a file the next load would refuse
    try:
        write_atomic(path, new)
    except OSError as exc:
        raise PolicyError(f"{path}: {exc.strerror or exc}") from None
    return True


def _pool_hosts(doc: Any, pool: str) -> list[Any] | None:
    pools = doc.get("pool")
    table: Any = pools.get(pool) if hasattr(pools, "get") else None
    hosts = table.get("hosts") if hasattr(table, "get") else None
    return hosts if isinstance(hosts, list) else None


def remove_pool_host(path: Path, pool: str, host: str) -> bool:
    """Take `host` out of the pool's hosts (an instance the queue launched, released); False when it
    is not there. PolicyError as for add_pool_host."""
    try:
        text = path.read_text(encoding="utf-8")
        doc = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    except Exception as exc:  # tomlkit's parse errors have no common public base
        raise PolicyError(f"{path}: not valid TOML: {exc}") from None
    hosts = _pool_hosts(doc, pool)
    if hosts is None or host not in hosts or len(hosts) == 1:  # a pool is never left empty
        return False
    hosts.remove(host)
    new = tomlkit.dumps(doc)
    parse(new, path)
    try:
        write_atomic(path, new)
    except OSError as exc:
        raise PolicyError(f"{path}: {exc.strerror or exc}") from None
    return True
