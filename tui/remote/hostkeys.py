"""Host key checking like OpenSSH's, over every known_hosts file ssh itself reads plus gpudeck's own.

Files: the config's UserKnownHostsFile (default ~/.ssh/known_hosts ~/.ssh/known_hosts2), its
GlobalKnownHostsFile (default /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2), and gpudeck's
own known_hosts, the only one ever written (appended, 0600).

Rules, as ssh applies them:
- a key on any `@revoked` line for the host is refused, whatever else is known, and so is a host
  certificate whose CA key is on one;
- any plain line holding the offered key accepts it (a stale second line does not make it "changed");
- otherwise any plain line for the host, of ANY key type, makes the key CHANGED: refused outright,
  and trusting does not override it (the old line has to be removed first);
- otherwise the key is unknown and needs the user's yes (only `hosts add`/`hosts trust` ask).
- a host *certificate* (asked for first when a `@cert-authority` line names the host) is accepted
  when host_certs.check() finds it signed by such a CA, valid now and naming the host (as written: no
  wildcards in host principals); otherwise,
  as ssh does, its plain key goes through the rules above, and an unknown key says why the
  certificate did not do.
Never AutoAddPolicy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import paramiko

from .. import paths
from . import host_certs
from .hostkey_errors import HostKeyChanged, HostKeyRevoked, HostKeyUnknown
from .known_hosts_file import KnownLine, parse
from .ssh_home import expand_tilde

USER_FILES = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
GLOBAL_FILES = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


def user_known_hosts() -> Path:
    return Path(expand_tilde(USER_FILES[0]))


def own_known_hosts() -> Path:
    return paths.config_dir() / "known_hosts"


@dataclass
class KnownHosts:
    """The files, loaded fresh on every check: another gpudeck (or ssh) may have written them since.
    The last file is gpudeck's own, where trusted keys are appended."""

    files: tuple[Path, ...]

    @classmethod
    def default(cls) -> KnownHosts:
        return cls.of(USER_FILES, GLOBAL_FILES)

    @classmethod
    def of(cls, user_files: Iterable[str], global_files: Iterable[str]) -> KnownHosts:
        """From a target's UserKnownHostsFile and GlobalKnownHostsFile lists (`none` is no file)."""
        named = [p for p in (*user_files, *global_files) if p.lower() != "none"]
        return cls((*(Path(expand_tilde(p)) for p in named), own_known_hosts()))

    def _lines(self, name: str) -> list[KnownLine]:
        return [line for path in self.files for line in parse(path) if line.matches(name)]

    def known_types(self, name: str) -> list[str]:
        """Key types stored for a name, so the server is asked for one of those first (like ssh)."""
        types: list[str] = []
        for line in self._lines(name):
            if line.marker is None and line.keytype not in types:
                types.append(line.keytype)
        return types

    def holds(self, name: str, key: paramiko.PKey) -> bool:
        """A plain line for name holds this key, and no @revoked line does."""
        blob = key.asbytes()
        lines = [line for line in self._lines(name) if line.blob == blob]
        return any(line.marker is None for line in lines) and not any(
            line.marker == "@revoked" for line in lines
        )

    def wants_certificate(self, name: str) -> bool:
        """Ask the server for a host certificate first: a `@cert-authority` line names this host, or a
        `@revoked` line does (ssh, asking for certificates first by default, sees a revoked CA's
        certificate and refuses it; taking the plain key instead would make it merely unknown)."""
        return any(line.marker is not None for line in self._lines(name))

    def check(self, name: str, key: paramiko.PKey, principal: str | None = None) -> None:
        """Return if the key is known for name; raise HostKeyRevoked, HostKeyChanged or HostKeyUnknown.
        principal: the host name a certificate must list (ssh: HostKeyAlias or host name, no port)."""
        blob = key.asbytes()
        cert = getattr(key, "public_blob", None)
        ca = host_certs.ca_key(cert.key_blob) if cert is not None else None
        lines = self._lines(name)
        for line in lines:  # ssh: a revoked CA revokes its host certificates, with no plain-key fallback
            if line.marker == "@revoked" and line.blob in (blob, ca):
                raise HostKeyRevoked(
                    name, key, line.where, "its certificate's CA key is @revoked" if line.blob == ca else ""
                )
        cert_note = self._certificate(name, key, lines, principal)
        if cert_note is None:
            return
        plain = [line for line in lines if line.marker is None]
        if any(line.blob == blob for line in plain):
            return
        if plain:
            # Prefer the offending line of the same type, as ssh names it; any type will do.
            same = [line for line in plain if line.keytype == key.get_name()]
            first = (same or plain)[0]
            raise HostKeyChanged(name, key, first, first.where)
        raise HostKeyUnknown(name, key, f"; {cert_note}" if cert_note else "")

    @staticmethod
    def _certificate(
        name: str, key: paramiko.PKey, lines: list[KnownLine], principal: str | None
    ) -> str | None:
        """None when the key is a host certificate that holds; else why not ('' when no CA is involved)."""
        cas = {line.blob for line in lines if line.marker == "@cert-authority"}
        cert = getattr(key, "public_blob", None)
        if cert is None or not cert.key_type.endswith("-cert-v01@openssh.com"):
            return "the server offered no host certificate for its @cert-authority" if cas else ""
        revoked = {line.blob for line in lines if line.marker == "@revoked"}
        try:
            host_certs.check(cert.key_blob, principal or name, cas, revoked)
        except host_certs.CertInvalid as exc:
            return f"its host certificate is refused: {exc}"
        return None

    def add(self, name: str, key: paramiko.PKey) -> Path:
        """Append to gpudeck's own file, owner-only whatever its mode was: never rewrite ~/.ssh's files."""
        path = self.files[-1]
        paths.ensure_private(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.fchmod(fd, 0o600)  # O_CREAT's mode does not touch a file that already existed
            size = os.fstat(fd).st_size
            # a file edited by hand may lack its final newline: ours would extend (and spoil) its last line
            lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
            os.write(fd, lead + f"{name} {key.get_name()} {key.get_base64()}\n".encode())
        finally:
            os.close(fd)
        return path


# Called for a key that check() found unknown: True to trust it (and it is saved), False to refuse.
Confirm = Callable[[str, paramiko.PKey], bool]


def verify(
    known: KnownHosts,
    name: str,
    key: paramiko.PKey,
    confirm: Confirm | None,
    bare: str | None = None,
    principal: str | None = None,
) -> None:
    """check(), asking `confirm` about an unknown key when one is given; a changed or revoked key always raises.

    bare: the host name without its port, for a server off port 22. As ssh 9 does, when no line
    names `[host]:port` at all, a line for the bare host holding this very key accepts it (a
    different key there leaves it unknown, not changed)."""
    try:
        known.check(name, key, principal)
    except HostKeyUnknown:
        if bare is not None and bare != name and known.holds(bare, key):
            return
        if confirm is None or not confirm(name, key):
            raise
        path = known.add(name, key)
        if not known.holds(name, key):  # never say "trusted" of a key the next connection will not find
            raise HostKeyUnknown(
                name, key, f"; it was written to {path} but does not read back from there"
            ) from None
