"""What `ssh TARGET` would connect to, from ~/.ssh/config and /etc/ssh/ssh_config (ssh_config_parse.py
reads them as OpenSSH does). The result is a plain `SshTarget` — where to connect, as whom, through
what, checked against which known_hosts files — that the connector needs nothing else for;
`SshTarget.dump()` prints it the way `ssh -G` does (`gpudeck hosts resolve`).
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass, field
from pathlib import Path

from ..printable import printable
from .ssh_canonical import canonicalize, is_address, mode
from .ssh_config_parse import Entry, Lookup, SshConfigError, apply, parse_text
from .ssh_home import expand_tilde, ssh_home
from .ssh_jump import printed as printed_jump
from .ssh_names import check_target_names
from .ssh_tokens import TokenError, expand, tokens

MAX_JUMP_DEPTH = 16  # a chain of first hops each naming its own ProxyJump (a cap for %h-made names)
# ssh's default identities, in its order (the ones paramiko cannot load are named, then skipped).
DEFAULT_IDENTITIES = ("id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk", "id_xmss", "id_dsa")
SYSTEM_CONFIG = Path("/etc/ssh/ssh_config")
DEFAULT_USER_KNOWN_HOSTS = ["~/.ssh/known_hosts", "~/.ssh/known_hosts2"]
DEFAULT_GLOBAL_KNOWN_HOSTS = ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"]
# readconf.c multistate_strict_hostkey: `true`/`false` are `yes`/`no` (and `ssh -G` writes them so).
_STRICT = {
    "yes": "true",
    "true": "true",
    "no": "false",
    "false": "false",
    "off": "false",
    "ask": "ask",
    "accept-new": "accept-new",
}

__all__ = ["SshConfig", "SshConfigError", "SshTarget", "jump_chain", "load_config", "resolve", "split_target"]


def ssh_dir() -> Path:
    return Path(ssh_home()) / ".ssh"


class SshConfig:
    """Config files in the order ssh reads them (the user's, then the system's); first value wins."""

    def __init__(self, files: list[list[Entry]]) -> None:
        self.files = files

    @classmethod
    def from_text(cls, text: str, name: str = "ssh config") -> SshConfig:
        return cls([parse_text(text, name, ssh_dir())])

    def lookup(self, host: str, user: str | None = None, port: int | None = None) -> Lookup:
        state = Lookup(original=host, user=user, port=port)
        for entries in self.files:
            apply(entries, state, True)
        name = state.hostname()
        name = name if is_address(name) else name.lower()
        canonical = canonicalize(name, state.options)
        if state.want_final or mode(state.options) != "no":
            # ssh reads the config once more, keeping what it has; now `Host` and `Match host` see
            # the canonical name and `Match canonical`/`final` match.
            state.final, state.host = True, canonical
            state.options["hostname"] = [canonical.replace("%", "%%")]
            for entries in self.files:
                apply(entries, state, True)
        return state


def _read(path: Path, base: Path, must: bool = False) -> list[Entry]:
    try:
        text = path.read_bytes().decode(
            "utf-8", errors="replace"
        )  # no newline translation: ssh ends lines at \n
    except OSError as exc:
        if must:  # ssh -F: "Can't open user config file"
            raise SshConfigError(f"cannot open config file {path}: {exc.strerror or exc}") from None
        return []
    return parse_text(text, str(path), base)


def load_config(path: Path | None = None) -> SshConfig:
    """~/.ssh/config then /etc/ssh/ssh_config; with a path, that file alone (as `ssh -F`, which
    refuses a file it cannot open)."""
    if path is not None:
        return SshConfig([_read(path, ssh_dir(), must=True)])
    return SshConfig([_read(ssh_dir() / "config", ssh_dir()), _read(SYSTEM_CONFIG, SYSTEM_CONFIG.parent)])


@dataclass
class SshTarget:
    alias: str  # what the user typed (known_hosts and ProxyJump work from the resolved parts)
    hostname: str
    port: int = 22
    user: str | None = None
    identity_files: list[str] = field(default_factory=list)  # expanded (~, %tokens, ${VARS})
    identities_only: bool = False
    proxy_jump: list[str] = field(default_factory=list)  # hops, first one first; each a target spec
    proxy_command: str | None = None  # %tokens expanded
    connect_timeout: float | None = None
    server_alive_interval: float | None = None
    server_alive_count_max: int = 3
    host_key_alias: str | None = None
    certificate_files: list[str] = field(default_factory=list)
    # IdentityAgent: None (ssh's default, $SSH_AUTH_SOCK), "none", "SSH_AUTH_SOCK", "$VAR", or a socket path
    identity_agent: str | None = None
    batch_mode: bool = False  # BatchMode: never ask anything (host keys, passphrases), as ssh
    user_known_hosts_files: list[str] = field(default_factory=lambda: list(DEFAULT_USER_KNOWN_HOSTS))
    global_known_hosts_files: list[str] = field(default_factory=lambda: list(DEFAULT_GLOBAL_KNOWN_HOSTS))
    strict_host_key_checking: str = "ask"
    raw: dict[str, list[str]] = field(default_factory=dict)  # the values as written, for dump()

    @property
    def known_hosts_name(self) -> str:
        """How known_hosts names this server: `host`, or `[host]:port` off port 22; a HostKeyAlias as
        written, whatever the port (sshconnect.c: the alias replaces `[host]:port` whole)."""
        if self.host_key_alias:
            return self.host_key_alias
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"

    @property
    def known_hosts_bare_name(self) -> str | None:
        """The port-less name ssh also accepts a matching key under, off port 22 without an alias."""
        return None if self.host_key_alias or self.port == 22 else self.hostname

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

    def dump(self) -> list[str]:
        """`keyword value` lines as `ssh -G` prints them (raw IdentityFile/ProxyCommand, expanded files)."""
        lines = [f"hostname {self.hostname}", f"user {self.user or getpass.getuser()}", f"port {self.port}"]
        identities = self.raw.get("identityfile") or [f"~/.ssh/{name}" for name in DEFAULT_IDENTITIES]
        lines += [f"identityfile {path}" for path in identities]
        lines.append(f"identitiesonly {'yes' if self.identities_only else 'no'}")
        lines += [f"certificatefile {path}" for path in self.raw.get("certificatefile", [])]
        if self.identity_agent is not None:
            lines.append(f"identityagent {self.identity_agent}")
        command, jump = (self.raw.get(key, [""])[0] for key in ("proxycommand", "proxyjump"))
        if command and command.lower() != "none":
            lines.append(f"proxycommand {command}")
        if jump:  # "" is `ProxyJump none`
            lines.append(f"proxyjump {printed_jump(jump)}")
        if self.host_key_alias:
            lines.append(f"hostkeyalias {self.host_key_alias}")
        lines.append(f"userknownhostsfile {' '.join(self.user_known_hosts_files)}")
        # ssh -G expands UserKnownHostsFile but prints GlobalKnownHostsFile as written (9.2)
        lines.append(
            f"globalknownhostsfile {' '.join(self.raw.get('globalknownhostsfile', DEFAULT_GLOBAL_KNOWN_HOSTS))}"
        )
        lines.append(f"stricthostkeychecking {self.strict_host_key_checking}")
        lines.append(f"batchmode {'yes' if self.batch_mode else 'no'}")
        timeout = self.connect_timeout
        lines.append(f"connecttimeout {'none' if timeout is None else _int_text(timeout)}")
        # ssh fills in 300 for BatchMode; gpudeck's liveness keeps its own limit then (heartbeats).
        interval = self.server_alive_interval
        interval = 300 if interval is None and self.batch_mode else interval
        lines.append(f"serveraliveinterval {_int_text(interval or 0)}")
        lines.append(f"serveralivecountmax {self.server_alive_count_max}")
        return lines


def _int_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def split_target(spec: str) -> tuple[str | None, str, int | None]:
    """`[user@]host[:port]`, `ssh://[user@]host[:port]` → (user, host, port); `[v6]:port` too.
    A host or user ssh would refuse to put in a `%` token is refused here, as ssh refuses it."""
    if spec.lower().startswith("ssh://"):
        spec = spec[6:].rstrip("/")
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
    refusal = check_target_names(host, user or None)
    if refusal:  # before any config is read: `Match exec` and ProxyCommand would expand them
        raise SshConfigError(f"{printable(spec)}: {refusal}")
    return user or None, host, port


def resolve(spec: str, identity_file: str | None = None, config: SshConfig | None = None) -> SshTarget:
    """What `ssh spec` would connect to: the spec's own user/port first (like `ssh -l/-p`), then the config."""
    user, host, port = split_target(spec)
    config = config if config is not None else load_config()
    found = config.lookup(host, user, port)
    opts = found.options
    hostname = found.hostname().lower()  # ssh lower-cases the host name it connects to
    try:
        port = port or int(_first(opts, "port") or 22)
    except ValueError:
        raise SshConfigError(f"{spec}: Port {_first(opts, 'port')!r} is not a number") from None
    user = user or _first(opts, "user")
    alias = _first(opts, "hostkeyalias")
    alias = alias.lower() if alias and alias.lower() != "none" else None
    jump = _first(opts, "proxyjump")
    raw = {k: list(v) for k, v in opts.items()}
    if identity_file:
        raw["identityfile"] = [identity_file, *raw.get("identityfile", [])]
    for key in ("identityfile", "certificatefile"):  # readconf.c keeps one of each path as written
        if key in raw:
            raw[key] = list(dict.fromkeys(raw[key]))
    values = tokens(hostname, port, user or getpass.getuser(), host, alias)
    try:
        proxy_command = _first(opts, "proxycommand")
        proxy_command = (
            None if not proxy_command or proxy_command.lower() == "none" else expand(proxy_command, values)
        )
        return SshTarget(
            alias=spec,
            hostname=hostname,
            port=port,
            user=user,
            identity_files=[_path(p, values) for p in raw.get("identityfile", [])],
            identities_only=(_first(opts, "identitiesonly") or "no").lower() == "yes",
            proxy_jump=jump.split(",") if jump else [],  # "" is `ProxyJump none`
            proxy_command=proxy_command,
            connect_timeout=_number(_first(opts, "connecttimeout")),
            server_alive_interval=_number(_first(opts, "serveraliveinterval")),
            server_alive_count_max=_count(_first(opts, "serveralivecountmax"), 3),
            host_key_alias=alias,
            certificate_files=[_path(p, values) for p in raw.get("certificatefile", [])],
            identity_agent=_agent_path(_first(opts, "identityagent"), values),
            batch_mode=(_first(opts, "batchmode") or "no").lower() in ("yes", "true"),
            user_known_hosts_files=[
                _path(p, values) for p in opts.get("userknownhostsfile", DEFAULT_USER_KNOWN_HOSTS)
            ],
            global_known_hosts_files=[
                _path(p, values) for p in opts.get("globalknownhostsfile", DEFAULT_GLOBAL_KNOWN_HOSTS)
            ],
            strict_host_key_checking=_STRICT.get(
                (_first(opts, "stricthostkeychecking") or "ask").lower(), "ask"
            ),
            raw=raw,
        )
    except TokenError as exc:
        raise SshConfigError(f"{spec}: {exc}") from None


def _first(opts: dict[str, list[str]], key: str) -> str | None:
    values = opts.get(key)
    return values[0] if values else None


def _path(path: str, values: dict[str, str]) -> str:
    """~ then %tokens and ${VARS}, as ssh expands IdentityFile and its kin ('none' stays)."""
    return path if path.lower() == "none" else expand(expand_tilde(path), values, env=True)


def _agent_path(value: str | None, values: dict[str, str]) -> str | None:
    """IdentityAgent as ssh reads it: `none`, `SSH_AUTH_SOCK` and `$VAR` (looked up when used) stay
    as written; a path, `${VAR}/…` too, gets `~`, %tokens and ${VARS}."""
    if (
        value is None
        or value.lower() == "none"
        or value == "SSH_AUTH_SOCK"
        or (value.startswith("$") and not value.startswith("${"))
    ):
        return value
    return _path(value, values)


def _host_part(spec: str) -> str:
    try:
        return split_target(spec)[1].lower()
    except SshConfigError:
        return spec.lower()


def jump_chain(target: SshTarget, config: SshConfig | None = None) -> list[SshTarget]:
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
        return float(value) if value is not None and value.lower() != "none" else None
    except ValueError:
        return None
