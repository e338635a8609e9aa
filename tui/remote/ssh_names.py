"""The host and user names OpenSSH lets into `%` tokens (readconf.c: ssh_valid_hostname, ssh_valid_ruser).

A typed target's host reaches a shell through `%h`/`%n` (ProxyCommand, `Match exec`, LocalCommand)
and its user through `%r`: ssh refuses the characters a shell gives meaning to before it reads its
config at all (the class of CVE-2023-51385), and so does gpudeck — whatever typed the name (a user,
hosts.toml, a ProxyJump hop). Names written literally in ssh_config are the user's own and not checked.
"""

from __future__ import annotations

import unicodedata

_HOST_FORBIDDEN = frozenset("'`\"$\\;&<>|(){},")
_USER_FORBIDDEN = frozenset("'`\";&<>|(){}")


def _control(c: str) -> bool:
    # C's iscntrl on ASCII, and the C1 controls too: a terminal acts on both.
    return unicodedata.category(c) == "Cc"


def valid_hostname(name: str) -> bool:
    if name.startswith("-"):
        return False
    return not any(c in _HOST_FORBIDDEN or c.isspace() or _control(c) for c in name)


def valid_user(name: str) -> bool:
    if name.startswith("-"):
        return False
    for i, c in enumerate(name):
        if _control(c) or c in _USER_FORBIDDEN:
            return False
        rest = name[i + 1 :]
        if c.isspace() and rest.startswith("-"):  # an option smuggled after a space
            return False
        if c == "\\" and not rest:
            return False
    return True


def check_target_names(host: str, user: str | None) -> str | None:
    """ssh's refusal for a typed target's parts, in its words, or None when both may be expanded."""
    if user is not None and not valid_user(user):
        return "remote username contains invalid characters"
    if not valid_hostname(host):
        return "hostname contains invalid characters"
    return None
