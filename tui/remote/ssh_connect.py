"""Opens an authenticated paramiko Transport the way `ssh` would: config, jumps, host keys, keys.

Built on paramiko.Transport rather than SSHClient so the host key check is ours (hostkeys.py) and
ProxyJump chains are plain `direct-tcpip` channels handed to the next hop as its socket.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, field
from typing import Any

import paramiko

from ..printable import printable
from . import hostkey_errors
from .host_certs import CERT_TYPES
from .hostkey_errors import HostKeyError, HostKeyUnknown, fingerprint
from .hostkeys import Confirm, KnownHosts, verify
from .proxy_command import ShellProxyCommand
from .ssh_config import SshConfigError, SshTarget, jump_chain, load_config, resolve
from .ssh_identities import AskPassphrase, identities


class SshError(Exception):
    """Could not connect or authenticate; the message is one line naming the host and why."""


@dataclass
class Connection:
    """An authenticated transport plus the jump hosts' transports it rides on (closed with it)."""

    transport: paramiko.Transport
    target: SshTarget
    hops: list[paramiko.Transport] = field(default_factory=list)

    def close(self) -> None:
        for t in [self.transport, *reversed(self.hops)]:
            with contextlib.suppress(Exception):
                t.close()

    @property
    def active(self) -> bool:
        active: bool = self.transport.is_active()  # paramiko ships no type hints
        return active


def _socket_for(target: SshTarget, timeout: float, via: paramiko.Transport | None) -> Any:
    if via is not None:
        try:
            return via.open_channel(
                "direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0), timeout=timeout
            )
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SshError(f"jump host cannot reach {target.describe()}: {_why(exc)}") from None
    if target.proxy_command:
        try:
            return ShellProxyCommand(target.proxy_command)
        except (paramiko.SSHException, OSError) as exc:
            raise SshError(f"ProxyCommand for {target.alias} failed: {exc}") from None
    try:
        sock = socket.create_connection((target.hostname, target.port), timeout=timeout)
    except OSError as exc:
        raise SshError(f"cannot reach {target.describe()}: {exc.strerror or exc}") from None
    # Small frames both ways (a request, a followed line): sent at once, as ssh does for an
    # interactive session. With Nagle, a frame written while the last is unacknowledged waits for
    # the peer's delayed ACK (~40 ms: a warm session opened right after another closed).
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Transport(paramiko.Transport):
    """A Transport that keeps the reason of the server's SSH_MSG_DISCONNECT, which paramiko only logs:
    sshd's "Too many authentication failures" (MaxAuthTries) says why a login was cut off."""

    disconnect_reason: str | None = None

    def _parse_disconnect(self, m: paramiko.Message) -> None:
        start = m.packet.tell()
        with contextlib.suppress(Exception):
            m.get_int()  # the reason code
            self.disconnect_reason = " ".join(printable(m.get_text()).split())[:300] or None
        m.packet.seek(start)
        super()._parse_disconnect(m)


def _authenticate(t: paramiko.Transport, target: SshTarget, user: str, ask: AskPassphrase | None) -> None:
    problems: list[str] = []
    tried = 0
    for source, key, problem in identities(target, ask):
        if key is None:
            problems.append(problem or source)
            continue
        try:
            tried += 1
            t.auth_publickey(user, key)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if isinstance(exc, paramiko.AuthenticationException) and t.is_active():
                continue  # this key is refused: the next one
            said = getattr(t, "disconnect_reason", None)
            if said:  # the server hung up, and said why (as ssh prints "Received disconnect")
                hint = (
                    " (name the right key: IdentityFile, with IdentitiesOnly yes)"
                    if "too many" in said.lower()
                    else ""
                )
                raise SshError(
                    f"{target.describe()}: the server cut the login off after {tried} key(s): {said}{hint}"
                ) from None
            raise SshError(f"{target.describe()}: authentication broke off: {_why(exc)}") from None
        if t.is_authenticated():
            return
    why = "; ".join(problems) if problems else "no key was accepted (tried ssh-agent and identity files)"
    raise SshError(f"{user}@{target.hostname}: permission denied: {why}")


def _open(
    target: SshTarget,
    known: KnownHosts | None,
    confirm: Confirm | None,
    timeout: float,
    via: paramiko.Transport | None,
    ask: AskPassphrase | None = None,
) -> paramiko.Transport:
    # Each hop is checked against the known_hosts files its own config entry names, as by ssh.
    known = known or KnownHosts.of(target.user_known_hosts_files, target.global_known_hosts_files)
    sock = _socket_for(target, timeout, via)
    t = _Transport(sock)
    try:
        stored = known.known_types(target.known_hosts_name)
        opts = t.get_security_options()
        if stored:  # ask for a key type we already hold, as ssh does, so a second key type is not "unknown"
            opts.key_types = [k for k in stored if k in opts.key_types] + [
                k for k in opts.key_types if k not in stored
            ]
        if known.wants_certificate(target.known_hosts_name):  # a CA vouches for (or is revoked for) this host
            opts.key_types = [CERT_TYPES[k] for k in opts.key_types if k in CERT_TYPES] + list(opts.key_types)
        # AES-GCM first (OpenSSH servers offer it by default): an AEAD cipher carries its own tag,
        # where CTR + HMAC has paramiko build an HMAC and compare tags in Python for every packet,
        # about a quarter of the client's CPU per pushed line (py-spy, bench/bench_logs.py).
        opts.ciphers = [c for c in opts.ciphers if c.endswith("-gcm@openssh.com")] + [
            c for c in opts.ciphers if not c.endswith("-gcm@openssh.com")
        ]
        t.banner_timeout = t.handshake_timeout = t.auth_timeout = timeout
        try:
            t.start_client(timeout=timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SshError(f"{target.describe()}: SSH handshake failed: {_why(exc)}") from None
        try:  # start_client returns quietly when its timeout passes mid-handshake
            server_key = t.get_remote_server_key()
        except paramiko.SSHException:
            raise SshError(
                f"{target.describe()}: SSH handshake failed: no answer within {timeout:g} s"
            ) from None
        try:
            verify(
                known,
                target.known_hosts_name,
                server_key,
                strict_confirm(target, confirm),
                target.known_hosts_bare_name,
                target.host_key_alias or target.hostname,
            )
        except HostKeyUnknown as exc:
            exc.strict = target.strict_host_key_checking == "true"
            raise
        user = target.user or _local_user()
        _authenticate(t, target, user, None if target.batch_mode else ask)
        if target.server_alive_interval and target.server_alive_interval > 0:
            t.set_keepalive(max(1, int(target.server_alive_interval)))  # this hop's own ServerAliveInterval
        return t
    except BaseException:
        t.close()
        raise


def strict_confirm(target: SshTarget, confirm: Confirm | None) -> Confirm | None:
    """What to do with an unknown key under the host's StrictHostKeyChecking, as ssh does: `ask`
    (the default) asks whoever may ask; `yes` never adds a key (the user adds it to known_hosts);
    `accept-new` and `no` add it with one notice. A changed or revoked key is refused whatever it says."""
    mode = target.strict_host_key_checking
    if mode == "true" or (mode == "ask" and target.batch_mode):  # BatchMode: nobody may be asked
        return None
    if mode in ("accept-new", "false"):

        def accept(name: str, key: paramiko.PKey) -> bool:
            hostkey_errors.notice(
                f"{name}: new host key {key.get_name()} {fingerprint(key)} trusted "
                f"(StrictHostKeyChecking {'accept-new' if mode == 'accept-new' else 'no'})"
            )
            return True

        return accept
    return confirm


def _why(exc: BaseException) -> str:
    """An exception as one line (paramiko's may span lines or be empty; a ChannelException's text
    is the server's reason, its str() a tuple)."""
    text = exc.text if isinstance(exc, paramiko.ChannelException) else str(exc)
    return " ".join(str(text).split())[:300] or type(exc).__name__


def _local_user() -> str:
    import getpass

    return getpass.getuser()


def resolve_target(
    spec: str, identity_file: str | None = None, host_key_alias: str | None = None
) -> tuple[SshTarget, list[SshTarget]]:
    """The host as ~/.ssh/config makes it, and its jump hosts: no network."""
    try:
        config = load_config()
        target = resolve(spec, identity_file, config)
        target.host_key_alias = target.host_key_alias or (host_key_alias.lower() if host_key_alias else None)
        return target, jump_chain(target, config)  # nested: a first hop's own ProxyJump is followed
    except SshConfigError as exc:
        raise SshError(f"{spec}: {exc}") from None


def connect(
    spec: str,
    identity_file: str | None = None,
    *,
    known: KnownHosts | None = None,
    confirm: Confirm | None = None,
    timeout: float = 15.0,
    ask_passphrase: AskPassphrase | None = None,
    host_key_alias: str | None = None,
) -> Connection:
    """Connect to `[user@]host[:port]` or a ~/.ssh/config alias, through its jumps if any.

    host_key_alias: the name the key is checked and stored under when ~/.ssh/config sets none
    (hosts.toml's `host_key_alias`: a cloud instance's id, whose address changes on every start).

    Raises SshError (unreachable, auth) or a HostKeyError (unknown / changed key), never a raw
    paramiko exception.
    """
    target, hop_targets = resolve_target(spec, identity_file, host_key_alias)
    hops: list[paramiko.Transport] = []
    try:
        via: paramiko.Transport | None = None
        for hop in hop_targets:
            hop.proxy_command = None if via is not None else hop.proxy_command
            via = _open(hop, known, confirm, hop.connect_timeout or timeout, via, ask_passphrase)
            hops.append(via)
        if hops:
            target.proxy_command = None  # ProxyJump wins, as in OpenSSH
        transport = _open(target, known, confirm, target.connect_timeout or timeout, via, ask_passphrase)
    except BaseException:
        for t in reversed(hops):
            t.close()
        raise
    return Connection(transport=transport, target=target, hops=hops)


__all__ = ["AskPassphrase", "Connection", "HostKeyError", "SshError", "connect", "resolve_target"]
