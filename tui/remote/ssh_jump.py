"""ProxyJump's value as OpenSSH 9.2 reads and prints it (readconf.c parse_jump, dump_client_config).

ssh takes the rest of the line as written (quotes stay), cuts it at `#` and, through its rtrim, at
the first blank; checks every hop's syntax (a bad one refuses the file); and `ssh -G` prints the hops
before the last as written and the last one normalised: `user@host:port`, `[addr]` for an address.
"""

from __future__ import annotations

import socket
import string

from .ssh_words import rtrim_bug

Hop = tuple["str | None", str, int]  # user, host, port (-1: none given)
_DOMAIN = frozenset(string.ascii_letters + string.digits + "._-")


def keep(text: str) -> str | None:
    """What ssh keeps of `ProxyJump TEXT`: "" for `none` (a host may be called none: `none x`), or
    the hops (None: a hop ssh refuses)."""
    if text.lower() == "none":
        return ""
    hops = rtrim_bug(text.split("#", 1)[0])
    return hops if all(parse_hop(hop) is not None for hop in hops.split(",")) else None


def printed(hops: str) -> str:
    """The value as `ssh -G` prints it."""
    extra, comma, last = hops.rpartition(",")
    hop = parse_hop(last)
    if hop is None:
        return hops
    user, host, port = hop
    numeric = ":" in host or all(c in "0123456789." for c in host)
    return (
        f"{extra}{comma}{user + '@' if user is not None else ''}{'[' if numeric else ''}{host}"
        f"{']' if numeric else ''}{f':{port}' if port > 0 else ''}"
    )


def parse_hop(hop: str) -> Hop | None:
    """ssh://[user@]host[:port] (parse_ssh_uri) or [user@]host[:port] (parse_user_host_port)."""
    if hop.startswith("ssh://"):
        return _uri(hop[6:])
    user: str | None = None
    if "@" in hop:
        user, _, hop = hop.rpartition("@")
        if not user:
            return None
    host, port = _host_port(hop)
    return None if host is None else (user, host, port)


def _uri(rest: str) -> Hop | None:
    user: str | None = None
    if "@" in rest:
        user, _, rest = rest.partition("@")
        user = user.split(";", 1)[0]  # connection parameters are ignored
        if not user:
            return None
        user = _urldecode(user)
        if user is None:
            return None
    host, sep, tail = _split_host(rest, ":/")
    if host is None or not host or not _valid_domain(host):
        return None
    port = -1
    if sep == ":" and tail:
        port = _port(tail.split("/", 1)[0])
        if port <= 0:
            return None
    return user, host, port


def _host_port(text: str) -> tuple[str | None, int]:
    host, sep, tail = _split_host(text, ":/")
    if not host or sep == "/":
        return None, -1
    port = -1
    if tail:
        port = _port(tail)
        if port <= 0:
            return None, -1
    return host, port


def _split_host(text: str, delims: str) -> tuple[str | None, str, str]:
    """hpdelim2: (host without [brackets], the delimiter met, what follows); host None if malformed."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None, "", ""
        host, rest = text[1:end], text[end + 1 :]
        if rest and rest[0] not in delims:
            return None, "", ""
        return host, rest[:1], rest[1:]
    cut = next((i for i, c in enumerate(text) if c in delims), len(text))
    return text[:cut], text[cut : cut + 1], text[cut + 1 :]


def _port(text: str) -> int:
    """a2port: 0-65535, or a service name."""
    if text.isdigit() and text.isascii():
        return int(text) if int(text) <= 65535 else -1
    try:
        return socket.getservbyname(text, "tcp")
    except OSError:
        return -1


def _valid_domain(host: str) -> bool:
    return host[0].isascii() and host[0].isalnum() and ".." not in host and all(c in _DOMAIN for c in host)


def _urldecode(text: str) -> str | None:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "+":
            out.append(" ")
        elif c == "%":
            pair = text[i + 1 : i + 3]
            if len(pair) != 2 or any(ch not in string.hexdigits for ch in pair):
                return None
            out.append(chr(int(pair, 16)))
            i += 2
        else:
            out.append(c)
        i += 1
    return "".join(out)
