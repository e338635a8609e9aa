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

    [hosts.cluster]                      # a Slurm login node (gpudeck hosts add --slurm)
    target = "me@login.cluster.example"
    agent_dir = "/shared/me/.gpudeck"     # on the file system the compute nodes share
    [hosts.cluster.slurm]                # present (even empty): jobs are submitted with sbatch
    partition = "gpu"                    # optional, each: --partition, --account, --qos for sbatch
    account = "lab"
    qos = "normal"
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from . import paths
from .errors import EXIT_ERROR, EXIT_USAGE
from .tomlfile import BadToml, line_of, parse_bytes, where, write_atomic

LOCAL = "local"
SLURM_KEYS = ("partition", "account", "qos")
SLURM_VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:+-]{1,128}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
KNOWN_FIELDS = ("target", "identity_file", "python", "agent_dir", "setup")
# tui/cost/settings.py's COST_KEYS (kept in step by tests/test_hosts_file.py), to import it only when used
COST_FIELDS = (
    "price_per_hour",
    "price_per_gpu_hour",  # a Slurm host's rates (issue 30)
    "price_per_node_hour",
    "currency",
    "market",
    "provider",
    "instance_type",
    "region",
    "instance_id",
    "idle_stop",
    "instance_idle_stop",
    "on_demand_price",  # a spot host's type on demand: `cost`'s savings
)

if TYPE_CHECKING:  # tomlkit (~5 ms to import) only where the file is written: reads use tomllib
    import tomlkit


class HostsFileError(Exception):
    """hosts.toml is unusable or an edit is refused: one line for the user, and the exit code it
    means (a bad value in the file is bad input, 2; a file that cannot be read or written is 1)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class HostEntry:
    """One host, as read; shared by every caller of load_hosts, so never changed in place."""

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
    """For a write: the document with its comments. A file that does not load is never rewritten."""
    import tomlkit

    _load(path)
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return tomlkit.document()
    except OSError as exc:
        raise HostsFileError(f"{path}: cannot read: {exc.strerror or exc}", EXIT_ERROR) from None


class _Checker:
    """Checks one parsed hosts.toml; each error names the file, the line and the field."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines = path, text.splitlines()

    def fail(self, name: str | None, key: str | None, problem: str) -> NoReturn:
        table = "hosts" if name is None else f"hosts.{name}"
        line = line_of(self.lines, table, key) if key else None
        line = (
            line
            or (name and line_of(self.lines, "hosts", name))
            or line_of(self.lines, "", "hosts", header=table)
            or line_of(self.lines, "", "hosts")
        )
        label = "hosts" if name is None else f"[hosts.{name}]"
        said = (
            f"{label} {problem}"
            if key and problem.startswith(key)
            else f"{label}{f' {key}' if key else ''}: {problem}"
        )
        raise HostsFileError(f"{where(self.path, line)}: {said}")

    def hosts(self, doc: dict[str, Any]) -> dict[str, HostEntry]:
        for key in doc:
            if key != "hosts":
                line = line_of(self.lines, "", key, header=key)
                raise HostsFileError(
                    f"{where(self.path, line)}: {key}: unknown (hosts.toml holds [hosts.NAME] tables)"
                )
        tables = doc.get("hosts", {})
        if not isinstance(tables, dict):
            self.fail(None, None, f"expected tables such as [hosts.gpu1], got {tables!r}"[:200])
        hosts: dict[str, HostEntry] = {LOCAL: HostEntry(name=LOCAL)}
        for name, table in tables.items():
            if not NAME_RE.match(name):
                self.fail(name, None, "host name: use 1-64 of A-Z a-z 0-9 . _ -")
            entry = self.entry(name, table)
            if name == LOCAL and entry.target:
                self.fail(
                    name,
                    "target",
                    "local is this machine: it takes no target (add the SSH host under another name)",
                )
            if name == LOCAL:  # `local` takes extra fields only: it is always this machine
                hosts[LOCAL] = HostEntry(name=LOCAL, extra=entry.extra)
            elif not entry.target:
                self.fail(name, None, "has no target")
            else:
                hosts[name] = entry
        return hosts

    def entry(self, name: str, data: Any) -> HostEntry:
        if not isinstance(data, dict):
            self.fail(name, None, "must be a table")
        for key in ("target", "identity_file", "python", "agent_dir"):
            if data.get(key) is not None and not isinstance(data[key], str):
                self.fail(name, key, f"expected a string, got {data[key]!r}"[:200])
        setup = data.get("setup") or []
        if isinstance(setup, str):
            setup = [setup]
        if not (isinstance(setup, list) and all(isinstance(s, str) for s in setup)):
            self.fail(name, "setup", "expected a list of shell lines")
        self.cost_fields(name, data)
        self.slurm_fields(name, data.get("slurm"))
        return HostEntry(
            name=name,
            target=data.get("target") or "",
            identity_file=data.get("identity_file"),
            python=data.get("python"),
            agent_dir=data.get("agent_dir") or "~/.gpudeck",
            setup=list(setup),
            extra={k: v for k, v in data.items() if k not in KNOWN_FIELDS},
        )

    def slurm_fields(self, name: str, table: Any) -> None:
        """`[hosts.NAME.slurm]`: the host is a Slurm login node (issue 30); its optional
        `partition`, `account` and `qos` go to every job's sbatch."""
        if table is None:
            return
        if not isinstance(table, dict):
            self.fail(name, "slurm", "expected a table ([hosts.NAME.slurm], maybe empty)")
        for key, value in table.items():
            if key not in SLURM_KEYS:
                self.fail(name, "slurm", f"{key}: unknown (one of {', '.join(SLURM_KEYS)})")
            if not isinstance(value, str) or not SLURM_VALUE_RE.match(value):
                self.fail(
                    name, "slurm", f"{key}: expected 1-128 of A-Z a-z 0-9 _ . , : + -, got {value!r}"[:200]
                )

    def cost_fields(self, name: str, data: dict[str, Any]) -> None:
        """The cost feature's keys, checked as `hosts set` checks them (imported here: most hosts
        have none, and a verb's start-up loads only what it uses)."""
        if not any(key in data for key in COST_FIELDS):
            return
        from .cost.settings import COST_KEYS, RATE_KEYS, PriceSettingsError, validate_price_settings

        for key in COST_KEYS:
            if key not in ("price_per_hour", *RATE_KEYS) and key in data and not isinstance(data[key], str):
                self.fail(name, key, f"expected a string, got {data[key]!r}"[:200])
            if key in data:
                try:
                    validate_price_settings({key: data[key]})
                except PriceSettingsError as exc:
                    self.fail(name, key, str(exc))


# hosts.toml as last read, by the file's identity: every host of a command asks for its entry,
# and parsing it once per host made `ps` over N hosts cost N parses (#25). A write changes the
# file's mtime or size (or, through the atomic rename, its inode), so a stale answer is never used.
_cache: dict[Path, tuple[tuple[int, int, int], dict[str, HostEntry]]] = {}


def _load(path: Path) -> dict[str, HostEntry]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return {LOCAL: HostEntry(name=LOCAL)}
    except OSError as exc:
        raise HostsFileError(f"{path}: cannot read: {exc.strerror or exc}", EXIT_ERROR) from None
    identity = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    cached = _cache.get(path)
    if cached is not None and cached[0] == identity:
        return cached[1]
    try:
        doc, text = parse_bytes(path.read_bytes())
    except OSError as exc:  # e.g. a directory named hosts.toml
        raise HostsFileError(f"{path}: cannot read: {exc.strerror or exc}", EXIT_ERROR) from None
    except BadToml as exc:
        raise HostsFileError(f"{where(path, exc.line)}: {exc}") from None
    hosts = _Checker(path, text).hosts(doc)
    _cache[path] = (identity, hosts)
    return hosts


def load_hosts() -> dict[str, HostEntry]:
    """Every host by name, `local` first (a `[hosts.local]` table may only add extra fields).
    Read with tomllib (10x tomlkit's speed) and kept until the file changes."""
    return dict(_load(hosts_path()))


def _write_atomic(path: Path, text: str) -> None:
    """A write that fails (a read-only or full home, a directory in the way) is one line naming the
    file and the real cause; the old file stays as it was."""
    _cache.pop(path, None)  # our own write: never trust the identity check with it (coarse mtimes)
    try:
        paths.ensure_private(path.parent)
        write_atomic(path, text)
    except OSError as exc:
        raise HostsFileError(
            f"{path}: cannot write: {paths.os_error_cause(exc, path.parent)}", EXIT_ERROR
        ) from None


def check_name(name: str) -> None:
    if not NAME_RE.match(name) or name == LOCAL:
        raise HostsFileError(f"host name {name!r}: use 1-64 of A-Z a-z 0-9 . _ - (and not 'local')")


def add_host(entry: HostEntry, replace: bool = False) -> None:
    import tomlkit

    check_name(entry.name)
    path = hosts_path()
    doc = _read_document(path)
    if "hosts" not in doc:
        doc["hosts"] = tomlkit.table(is_super_table=True)
    hosts = doc["hosts"]
    if entry.name in hosts and not replace:
        raise HostsFileError(f"host {entry.name} already exists (gpudeck hosts rm {entry.name} first)")
    table = hosts[entry.name] if entry.name in hosts else tomlkit.table()
    values: dict[str, Any] = {
        "target": entry.target,
        "identity_file": entry.identity_file,
        "python": entry.python,
        "agent_dir": entry.agent_dir if entry.agent_dir != "~/.gpudeck" else None,
        "setup": list(entry.setup) or None,
    }
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
    import tomlkit

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
    import tomlkit

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
