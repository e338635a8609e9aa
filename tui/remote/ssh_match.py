"""`Match` lines as OpenSSH 9.2's match_cfg_line reads and evaluates them.

Read once (a bad condition refuses the file, wherever it stands): the criteria are cut with strdelim,
so `host=b` is `host b`; `all` stands alone; an unknown criterion is refused. Evaluated per lookup:
one miss is enough, and an `exec` after a miss is not run. `exec` runs under $SHELL (else /bin/sh),
with %k the HostKeyAlias so far (else the host) and %C the hash of %l%h%p%r, as 9.2 gives them.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import socket
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .known_hosts_file import host_matches
from .ssh_home import ssh_home
from .ssh_words import QuoteError, strdelim

if TYPE_CHECKING:
    from .ssh_config_parse import Lookup

WITH_ARGUMENT = frozenset({"host", "originalhost", "user", "localuser", "exec", "tagged"})


@dataclass(frozen=True)
class Criterion:
    name: str  # lower-case: all, canonical, final, or one of WITH_ARGUMENT
    negate: bool
    arg: str = ""


def parse_match(text: str) -> list[Criterion]:
    """The criteria of `Match TEXT`; ValueError says why ssh refuses the line."""
    out: list[Criterion] = []
    rest: str | None = text
    while True:
        try:
            word, rest = strdelim(rest)
        except QuoteError:
            word, rest = None, None  # strdelim's NULL ends the list
        if not word:
            break
        if word.startswith("#"):
            rest = None
            break
        negate = word.startswith("!")
        name = word[1:] if negate else word
        lname = name.lower()
        if lname == "all":
            following, after = _next(rest)
            if len(out) > 1 or (following and not following.startswith("#")):
                raise ValueError(f"'{word}' cannot be combined with other Match attributes")
            rest = None if following.startswith("#") else after
            out.append(Criterion("all", negate))
            return _no_rest(out, rest)
        if lname in ("canonical", "final"):
            out.append(Criterion(lname, negate))
            continue
        arg, rest = _next(rest)
        if not arg or arg.startswith("#"):
            raise ValueError(f"Missing Match criteria for {name}")
        if lname not in WITH_ARGUMENT:
            raise ValueError(f"Unsupported Match attribute {name}")
        out.append(Criterion(lname, negate, arg))
    if not out:
        raise ValueError("One or more attributes required for Match")
    return _no_rest(out, rest)


def _next(rest: str | None) -> tuple[str, str | None]:
    try:
        word, after = strdelim(rest)
    except QuoteError:
        return "", None
    return word or "", after


def _no_rest(out: list[Criterion], rest: str | None) -> list[Criterion]:
    if rest:
        raise ValueError("extra arguments at end of line")
    return out


def matches(criteria: list[Criterion], state: Lookup) -> bool:
    """Whether the block applies; ValueError when an exec cannot run."""
    result = True
    for c in criteria:
        if c.name == "all":
            return result and not c.negate
        if c.name in ("canonical", "final"):
            # readconf: both are "this is the final pass"; any `final`, even `!final`, asks for it (9.2).
            state.want_final |= c.name == "final"
            ok = state.final
        elif c.name == "exec":
            if not result:
                continue  # 9.2 skips an exec once a criterion before it missed
            ok = _run(c.arg, state)
        else:
            ok = _criterion(c, state)
        if ok == c.negate:
            result = False
    return result


def _criterion(c: Criterion, state: Lookup) -> bool:
    if c.name == "host":
        return host_matches(c.arg, state.hostname())
    if c.name == "originalhost":
        return host_matches(c.arg, state.original)
    if c.name == "user":
        return host_matches(c.arg, state.remote_user())
    if c.name == "localuser":
        return host_matches(c.arg, getpass.getuser())
    return host_matches(c.arg, (state.options.get("tag") or [""])[0])  # tagged


def _run(command: str, state: Lookup) -> bool:
    from .ssh_tokens import TokenError, expand

    shell = os.environ.get("SHELL") or "/bin/sh"
    if not os.access(shell, os.X_OK):
        raise ValueError(f'Match exec: shell "{shell}" is not executable')
    try:
        line = expand(command, exec_tokens(state))
    except TokenError as exc:
        raise ValueError(f"Match exec: {exc}") from None
    done = subprocess.run(
        [shell, "-c", line],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=30,
    )
    return done.returncode == 0


def exec_tokens(state: Lookup) -> dict[str, str]:
    """match_cfg_line's tokens: the config so far, %k the HostKeyAlias as written, no %j."""
    host, user = state.hostname(), state.remote_user()
    port = str(state.port or int((state.options.get("port") or ["22"])[0]))
    local = socket.gethostname()
    alias = state.options.get("hostkeyalias")
    return {
        "C": hashlib.sha1(f"{local}{host}{port}{user}".encode()).hexdigest(),
        "L": local.split(".")[0],
        "d": ssh_home(),
        "h": host,
        "k": alias[0] if alias else host,
        "l": local,
        "n": state.original,
        "p": port,
        "r": user,
        "u": getpass.getuser(),
        "i": str(os.getuid()),
        "%": "%",
    }
