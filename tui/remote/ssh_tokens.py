"""ssh_config's `%` tokens and `${VAR}`s, expanded as ssh does for IdentityFile, CertificateFile,
ProxyCommand, UserKnownHostsFile and `Match exec` (ssh_config(5) "TOKENS")."""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket

from .ssh_home import ssh_home

_TOKEN = re.compile(r"%(.)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}", re.DOTALL)


class TokenError(ValueError):
    pass


def tokens(hostname: str, port: int, user: str, original: str, alias: str | None = None) -> dict[str, str]:
    """The values, named by their letter, as OpenSSH 9.2 gives them: %h host, %p port, %r remote
    user, %u local user, %n the host as typed, %d local home, %k HostKeyAlias or the host as typed,
    %l/%L local host name, %i uid, %C a hash of %l%h%p%r, %% itself. (%j came in 9.4: unknown here.)"""
    local = socket.gethostname()
    values = {
        "h": hostname,
        "p": str(port),
        "r": user,
        "u": getpass.getuser(),
        "n": original,
        "d": ssh_home(),
        "k": alias or original,
        "l": local,
        "L": local.split(".")[0],
        "i": str(os.getuid()),
        "%": "%",
    }
    values["C"] = hashlib.sha1(f"{local}{hostname}{port}{user}".encode()).hexdigest()
    return values


def expand(text: str, values: dict[str, str], env: bool = False) -> str:
    """Every `%x` (an unknown one is an error, as for ssh); `${VAR}` too when env is True."""

    def one(m: re.Match[str]) -> str:
        if m.group(2) is not None:
            if not env:
                return m.group(0)
            if m.group(2) not in os.environ:
                raise TokenError(f"environment variable ${{{m.group(2)}}} is not set")
            return os.environ[m.group(2)]
        letter = m.group(1)
        if letter not in values:
            raise TokenError(f"unknown token %{letter} in {text!r}")
        return values[letter]

    return _TOKEN.sub(one, text)
