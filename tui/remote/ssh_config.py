"""~/.ssh/config as OpenSSH reads it, including what paramiko's SSHConfig skips (`Include`).

`Include` lines are expanded in place before paramiko parses the text: globs, `~`, and paths
relative to ~/.ssh, recursively (with a depth cap, like OpenSSH's). The result is a plain
`SshTarget` — where to connect, as whom, through what — that the connector needs nothing else for.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

MAX_INCLUDE_DEPTH = 16
MAX_JUMP_DEPTH = 16  # a chain of first hops each naming its own ProxyJump (a cap for %h-made names)
DEFAULT_IDENTITIES = ("id_ed25519", "id_ecdsa", "id_rsa")
_INCLUDE = re.compile(r"^\s*include\s*(=\s*|\s)(?P<args>.+?)\s*$", re.IGNORECASE)


class SshConfigError(Exception):
    pass


def ssh_dir() -> Path:
    return Path(os.path.expanduser("~")) / ".ssh"


def expand_includes(text: str, depth: int = 0) -> str:
    """The config text with every `Include` replaced by the files it names, in glob order."""
    if depth > MAX_INCLUDE_DEPTH:
        raise SshConfigError(f"Include nested deeper than {MAX_INCLUDE_DEPTH} (a loop?)")
    out: list[str] = []
    for line in text.splitlines():
        match = _INCLUDE.match(line)
        if not match:
            out.append(line)
            continue
        for pattern in match.group("args").split():
            pattern = os.path.expanduser(pattern.strip('"'))
            if not os.path.isabs(pattern):
                pattern = str(ssh_dir() / pattern)  # OpenSSH: relative to ~/.ssh for the user config
            for path in sorted(glob.glob(pattern)):
                try:
                    out.append(expand_includes(Path(path).read_text(encoding="utf-8", errors="replace"), depth + 1))
                except OSError:
                    continue  # unreadable includes are skipped, as ssh does
    return "\n".join(out)


def load_config(path: Path | None = None) -> paramiko.SSHConfig:
    path = path or ssh_dir() / "config"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return paramiko.SSHConfig.from_text(expand_includes(text))


@dataclass
class SshTarget:
    alias: str  # what the user typed (known_hosts and ProxyJump work from the resolved parts)
    hostname: str
    port: int = 22
    user: str | None = None
    identity_files: list[str] = field(default_factory=list)
    identities_only: bool = False
    proxy_jump: list[str] = field(default_factory=list)  # hops, first one first; each a target spec
    proxy_command: str | None = None
    connect_timeout: float | None = None
    server_alive_interval: float | None = None
    server_alive_count_max: int = 3
    host_key_alias: str | None = None

    @property
    def known_hosts_name(self) -> str:
        """How known_hosts names this server: `host`, or `[host]:port` off port 22."""
        name = self.host_key_alias or self.hostname
        return name if self.port == 22 else f"[{name}]:{self.port}"

    def silence_limit(self, default: float) -> float:
        """Seconds of silence on this host's stream that count as a dead peer.

        ServerAliveInterval × ServerAliveCountMax when the config sets an interval (OpenSSH: that
        many unanswered intervals, CountMax defaulting to 3), else gpudeck's `alive_timeout`.
        """
        if self.server_alive_interval and self.server_alive_interval > 0:
            return self.server_alive_interval * max(1, self.server_alive_count_max)
        return default

    def describe(self) -> str:
        return f"{self.user + '@' if self.user else ''}{self.hostname}:{self.port}"


def split_target(spec: str) -> tuple[str | None, str, int | None]:
    """`[user@]host[:port]` → (user, host, port); `[v6]:port` is understood too."""
    user, _, hostport = spec.rpartition("@") if "@" in spec else (None, "", spec)
    port: int | None = None
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdigit():
            port = int(rest[1:])
    elif hostport.count(":") == 1:
        host, _, p = hostport.partition(":")
        if not p.isdigit():
            raise SshConfigError(f"{spec!r}: the port must be a number")
        port = int(p)
    else:
        host = hostport
    if not host:
        raise SshConfigError(f"{spec!r}: no host name")
    return user or None, host, port


def resolve(spec: str, identity_file: str | None = None, config: paramiko.SSHConfig | None = None) -> SshTarget:
    """What `ssh spec` would connect to: the config's values, overridden by the spec's own user/port."""
    user, host, port = split_target(spec)
    config = config if config is not None else load_config()
    opts = config.lookup(host)
    identities = [os.path.expanduser(identity_file)] if identity_file else []
    identities += [os.path.expanduser(p) for p in opts.get("identityfile", [])]
    jump = opts.get("proxyjump")
    proxy_command = opts.get("proxycommand")
    if proxy_command and proxy_command.strip().lower() == "none":
        proxy_command = None
    return SshTarget(
        alias=spec,
        hostname=opts.get("hostname", host),
        port=port or int(opts.get("port", 22)),
        user=user or opts.get("user"),
        identity_files=identities,
        identities_only=str(opts.get("identitiesonly", "no")).lower() == "yes",
        proxy_jump=[] if not jump or jump.lower() == "none" else [h.strip() for h in jump.split(",") if h.strip()],
        proxy_command=proxy_command,
        connect_timeout=_number(opts.get("connecttimeout")),
        server_alive_interval=_number(opts.get("serveraliveinterval")),
        server_alive_count_max=_count(opts.get("serveralivecountmax"), 3),
        host_key_alias=opts.get("hostkeyalias"),
    )


def _host_part(spec: str) -> str:
    try:
        return split_target(spec)[1].lower()
    except SshConfigError:
        return spec.lower()


def jump_chain(target: SshTarget, config: paramiko.SSHConfig | None = None) -> list[SshTarget]:
    """The jump hosts to pass through on the way to `target`, the one to dial first first.

    As OpenSSH: `ProxyJump B1,B2,…,Bn` runs `ssh -J B1,…,Bn-1 -W %h:%p Bn`, so the later hops are
    reached through the earlier ones and their own ProxyJump/ProxyCommand are not read, while the
    first hop is an ordinary `ssh B1` and its own config entry's ProxyJump is followed (and so on).
    `ProxyJump none` stops it. A first hop that comes round again is a loop: one line names it.
    """
    config = config if config is not None else load_config()
    tail: list[SshTarget] = []  # ends up the whole chain
    path = [target.alias]
    seen = {_host_part(target.alias)}
    current = target
    while current.proxy_jump:
        first, *rest = current.proxy_jump
        if _host_part(first) in seen:
            raise SshConfigError(f"ProxyJump loop: {' -> '.join([*path, first])}")
        if len(path) > MAX_JUMP_DEPTH:
            raise SshConfigError(f"ProxyJump nested deeper than {MAX_JUMP_DEPTH}: {' -> '.join(path)}")
        current = resolve(first, None, config)
        tail[:0] = [current, *(resolve(h, None, config) for h in rest)]
        path.append(first)
        seen.add(_host_part(first))
    return tail


def default_identities() -> list[str]:
    return [str(ssh_dir() / name) for name in DEFAULT_IDENTITIES if (ssh_dir() / name).exists()]


def _count(value: str | None, default: int) -> int:
    number = _number(value)
    return default if number is None else int(number)  # an explicit 0 stays 0


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
