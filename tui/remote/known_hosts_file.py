"""known_hosts lines as OpenSSH reads them (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"), without paramiko.

paramiko.HostKeys keeps one key per (host, type) and raises on `@revoked`/`@cert-authority`
lines, which made every host fail; this reader keeps every line, with its marker, so the checker
can do what ssh does: any matching line accepts, a revoked key is refused, a CA line is skipped.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

MAX_LINES = 200_000  # a reader is total, but a runaway file must not take the client down
MARKERS = ("@cert-authority", "@revoked")  # as written: ssh compares them case and all


@dataclass(frozen=True)
class KnownLine:
    path: str
    lineno: int
    marker: str | None  # None, "@revoked" or "@cert-authority"
    hosts: str  # the comma-separated patterns, or one `|1|salt|hash`
    keytype: str
    blob: bytes

    def matches(self, name: str) -> bool:
        return host_matches(self.hosts, name)

    # The two PKey methods the refusal messages use, so a known line reads like the server's key.
    def get_name(self) -> str:
        return self.keytype

    def asbytes(self) -> bytes:
        return self.blob

    @property
    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


def parse(path: Path) -> list[KnownLine]:
    """Every well-formed line of a file; a missing or unreadable file knows nothing (as for ssh)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[KnownLine] = []
    for lineno, line in enumerate(text.splitlines()[:MAX_LINES], 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = None
        if fields[0].startswith("@"):
            marker, fields = fields[0], fields[1:]
            if marker not in MARKERS or (fields and fields[0].startswith("@")):
                continue  # hostfile.c check_markers: an unknown marker (`@REVOKED` too), or two, voids the line
        if len(fields) < 3:
            continue  # malformed: skipped, as ssh does
        try:
            blob = base64.b64decode(fields[2], validate=True)
        except (binascii.Error, ValueError):
            continue
        out.append(KnownLine(str(path), lineno, marker, fields[0], fields[1], blob))
    return out


def _pattern_matches(pattern: str, name: str) -> bool:
    # OpenSSH's match_pattern: only `*` and `?` are special, and host names compare case-blind.
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.lower())
    return re.fullmatch(regex, name.lower(), re.DOTALL) is not None


def host_matches(hosts: str, name: str) -> bool:
    """`hosts` is a known_hosts host field; a `!pattern` that matches vetoes the line (match_hostname)."""
    if hosts.startswith("|1|"):
        return _hashed_matches(hosts, name)
    positive = False
    for pattern in hosts.split(","):
        negated = pattern.startswith("!")
        if _pattern_matches(pattern[1:] if negated else pattern, name):
            if negated:
                return False
            positive = True
    return positive


def pattern_list_matches(patterns: list[str], name: str) -> bool:
    """ssh_config `Host a !b c*`: the same rule over a list (any positive, no negative)."""
    return host_matches(",".join(patterns), name)


def _hashed_matches(field: str, name: str) -> bool:
    # `|1|base64(salt)|base64(HMAC-SHA1(salt, name))`, as HashKnownHosts writes it.
    try:
        _, _, salt, digest = field.split("|", 3)
        mac = hmac.new(base64.b64decode(salt), name.lower().encode(), hashlib.sha1).digest()
        return hmac.compare_digest(mac, base64.b64decode(digest))
    except (ValueError, binascii.Error):
        return False


__all__ = ["KnownLine", "host_matches", "parse", "pattern_list_matches"]
