"""hosts.toml: the user's hosts, one table each; `local` is always there, even if the file is not.

Writes go through tomlkit on the parsed document, so the user's comments, order and any field we
do not know (price, provider, instance… added by other features) survive; the file is replaced
atomically, so a crash leaves the old file or the new one, never half of one.

    [hosts.gpu1]
    target = "ubuntu@gpu1.example.com:22"   # or an alias from ~/.ssh/config
    identity_file = "~/.ssh/gpu1"
    python = "/usr/bin/python3"
    agent_dir = "~/.gpudeck"
    setup = ["source ~/venv/bin/activate"]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit

from . import paths
from .tomlfile import write_atomic

LOCAL = "local"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
KNOWN_FIELDS = ("target", "identity_file", "python", "agent_dir", "setup")


class HostsFileError(Exception):
    """hosts.toml is unreadable or an edit is refused; the message is one line for the user."""


@dataclass
class HostEntry:
    name: str
    target: str = ""
    identity_file: str | None = None
    python: str | None = None
    agent_dir: str = "~/.gpudeck"
    setup: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # fields other features own

    @property
    def is_local(self) -> bool:
        return self.name == LOCAL


def hosts_path() -> Path:
    return paths.config_dir() / "hosts.toml"


def _read_document(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except OSError as exc:
        raise HostsFileError(f"{path}: {exc.strerror}") from None
    try:
        return tomlkit.parse(text)
    except Exception as exc:  # tomlkit's parse errors have no common public base
        raise HostsFileError(f"{path}: not valid TOML: {exc}") from None


def _entry(name: str, table: Any) -> HostEntry:
    data = table.unwrap() if hasattr(table, "unwrap") else dict(table)
    if not isinstance(data, dict):
        raise HostsFileError(f"{hosts_path()}: [hosts.{name}] must be a table")
    for key in ("target", "identity_file", "python", "agent_dir"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise HostsFileError(f"{hosts_path()}: [hosts.{name}] {key}: expected a string, got {data[key]!r}")
    setup = data.get("setup") or []
    if isinstance(setup, str):
        setup = [setup]
    if not (isinstance(setup, list) and all(isinstance(s, str) for s in setup)):
        raise HostsFileError(f"{hosts_path()}: [hosts.{name}] setup: expected a list of shell lines")
    return HostEntry(
        name=name,
        target=str(data.get("target") or ""),
        identity_file=data.get("identity_file"),
        python=data.get("python"),
        agent_dir=str(data.get("agent_dir") or "~/.gpudeck"),
        setup=[str(s) for s in setup],
        extra={k: v for k, v in data.items() if k not in KNOWN_FIELDS},
    )


def load_hosts() -> dict[str, HostEntry]:
    """Every host by name, `local` first (a `[hosts.local]` table may only add extra fields)."""
    doc = _read_document(hosts_path())
    hosts: dict[str, HostEntry] = {LOCAL: HostEntry(name=LOCAL)}
    for name, table in (doc.get("hosts") or {}).items():
        if name == LOCAL:
            hosts[LOCAL].extra = _entry(name, table).extra
            continue
        entry = _entry(name, table)
        if not entry.target:
            raise HostsFileError(f"{hosts_path()}: [hosts.{name}] has no target")
        hosts[name] = entry
    return hosts


def _write_atomic(path: Path, text: str) -> None:
    paths.ensure_private(path.parent)
    write_atomic(path, text)


def check_name(name: str) -> None:
    if not NAME_RE.match(name) or name == LOCAL:
        raise HostsFileError(f"host name {name!r}: use 1-64 of A-Z a-z 0-9 . _ - (and not 'local')")


def add_host(entry: HostEntry, replace: bool = False) -> None:
    check_name(entry.name)
    path = hosts_path()
    doc = _read_document(path)
    if "hosts" not in doc:
        doc["hosts"] = tomlkit.table(is_super_table=True)
    hosts = doc["hosts"]
    if entry.name in hosts and not replace:
        raise HostsFileError(f"host {entry.name} already exists (gpudeck hosts rm {entry.name} first)")
    table = hosts[entry.name] if entry.name in hosts else tomlkit.table()
    values: dict[str, Any] = {"target": entry.target, "identity_file": entry.identity_file, "python": entry.python,
                              "agent_dir": entry.agent_dir if entry.agent_dir != "~/.gpudeck" else None,
                              "setup": list(entry.setup) or None}
    _apply(table, values)
    if entry.name not in hosts:
        hosts[entry.name] = table
    _write_atomic(path, tomlkit.dumps(doc))


def _apply(table: Any, values: dict[str, Any]) -> None:
    """Set each field; None deletes it. Other fields and comments stay as the user wrote them."""
    for key, value in values.items():
        if value is None:
            if key in table:
                del table[key]
        else:
            table[key] = value


def set_host_fields(name: str, values: dict[str, Any]) -> None:
    """Set (or, for None, delete) fields of a host's table, keeping the rest and the comments."""
    path = hosts_path()
    doc = _read_document(path)
    if "hosts" not in doc:
        doc["hosts"] = tomlkit.table(is_super_table=True)
    hosts = doc["hosts"]
    if name not in hosts:
        if name != LOCAL:
            raise HostsFileError(f"no host {name!r} in {path} (add it with `gpudeck hosts add`)")
        hosts[name] = tomlkit.table()
    table = hosts[name]
    _apply(table, values)
    _write_atomic(path, tomlkit.dumps(doc))


def remove_host(name: str) -> None:
    if name == LOCAL:
        raise HostsFileError("the local host cannot be removed")
    path = hosts_path()
    doc = _read_document(path)
    hosts = doc.get("hosts")
    if not hosts or name not in hosts:
        raise HostsFileError(f"no host {name!r} in {path}")
    del hosts[name]
    _write_atomic(path, tomlkit.dumps(doc))


def host_fields(name: str) -> dict[str, Any]:
    """A host's fields that other features own (price, market, idle_stop…) as a dict; {} for a
    host hosts.toml does not name. HostsFileError when the file is unusable."""
    entry = load_hosts().get(name)
    return dict(entry.extra) if entry is not None else {}
