"""ssh_config(5) read the way OpenSSH's readconf.c reads it, for the keywords gpudeck uses.

paramiko's SSHConfig differs from ssh in ways that matter here (no Include, no Match user/
originalhost, a later `Host *` value overriding an earlier one for some keywords, ProxyCommand
split into words), so the rules are OpenSSH's own, checked against `ssh -G` in the tests:

- the first value obtained for a keyword wins; IdentityFile and CertificateFile accumulate;
- `Host` patterns match the name as typed (case-sensitive), `!pattern` vetoes the block;
- `Match` supports all, host, originalhost, user, localuser, exec, canonical, final and tagged (the
  `Tag` keyword, OpenSSH >= 9.4), each negatable with `!`; canonical and final match in the second
  pass that ssh makes after canonicalizing (ssh_canonical.py), in which `Host` sees that name;
- `Include` is read where it stands and, inside a Host/Match block, applies only when that block
  does; relative paths are relative to ~/.ssh (user config) or /etc/ssh (system config);
- arguments are split like ssh's argv_split (quotes, backslashes, `#` ends the line), except
  ProxyCommand, which keeps the raw rest of its line.
"""

from __future__ import annotations

import getpass
import glob
import os
import subprocess
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from .known_hosts_file import host_matches
from .ssh_home import expand_tilde

MAX_INCLUDE_DEPTH = 16
MULTI = frozenset({"identityfile", "certificatefile"})  # these accumulate; every other keyword: first wins
RAW = frozenset({"proxycommand"})  # the rest of the line as written


class SshConfigError(Exception):
    pass


@dataclass
class Entry:
    keyword: str  # lower-case
    args: list[str]
    raw: str  # the text after the keyword (ProxyCommand)
    where: str  # file:line, for error messages
    children: list[list[Entry]] = field(default_factory=list)  # Include: one list per file


def split_args(text: str, where: str) -> list[str]:
    """OpenSSH's argv_split(…, terminate_on_comment=1): whitespace-separated words, "…"/'…' quoting,
    backslash escapes of quotes/backslash/space, and a `#` at the start of a word ends the line."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n or text[i] == "#":
            break
        word, quote = [], None
        while i < n:
            c = text[i]
            if quote is None and c in " \t":
                break
            if c == "\\" and i + 1 < n and text[i + 1] in "\\'\" " and quote != "'":
                word.append(text[i + 1])
                i += 2
                continue
            if quote is None and c in "'\"":
                quote = c
            elif c == quote:
                quote = None
            else:
                word.append(c)
            i += 1
        if quote is not None:
            raise SshConfigError(f"{where}: unterminated quote")
        out.append("".join(word))
    return out


def _keyword(line: str) -> tuple[str, str] | None:
    """(keyword, rest): ssh's strdelim allows `Keyword value`, `Keyword=value`, `Keyword = value`."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    end = 0
    while end < len(line) and line[end] not in " \t=":
        end += 1
    keyword, rest = line[:end], line[end:].lstrip(" \t")
    if rest.startswith("="):
        rest = rest[1:].lstrip(" \t")
    return keyword.lower(), rest


def parse_text(text: str, name: str, base: Path, depth: int = 0) -> list[Entry]:
    if depth > MAX_INCLUDE_DEPTH:
        raise SshConfigError(f"{name}: Include nested deeper than {MAX_INCLUDE_DEPTH} (a loop?)")
    entries: list[Entry] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        parsed = _keyword(line)
        if parsed is None:
            continue
        keyword, rest = parsed
        where = f"{name}:{lineno}"
        args = split_args(rest, where)
        if not args and keyword not in RAW:
            continue  # ssh refuses "no argument after keyword"; a reader is total, so skip it
        entry = Entry(keyword, args, rest, where)
        if keyword == "include":
            for pattern in args:
                pattern = expand_tilde(pattern)
                if not os.path.isabs(pattern):
                    pattern = str(base / pattern)
                for path in sorted(glob.glob(pattern)):
                    try:
                        sub = Path(path).read_text(encoding="utf-8", errors="replace")
                    except OSError:
                        continue  # unreadable includes are skipped, as ssh does
                    entry.children.append(parse_text(sub, path, base, depth + 1))
        entries.append(entry)
    return entries


@dataclass
class Lookup:
    """One resolution's state: what ssh calls host_arg (as typed), the options so far, the user."""

    original: str
    user: str | None
    port: int | None
    options: dict[str, list[str]] = field(default_factory=dict)
    want_final: bool = False
    final: bool = False
    host: str = ""  # what `Host` patterns see: the typed name, then the canonical one in the final pass

    def __post_init__(self) -> None:
        self.host = self.host or self.original

    def take(self, entry: Entry) -> None:
        key = entry.keyword
        if key in MULTI:
            self.options.setdefault(key, []).append(entry.args[0])
        elif key in RAW:
            # A ProxyJump read earlier wins over this ProxyCommand (readconf: "Skip below").
            if key not in self.options and "proxyjump" not in self.options:
                self.options[key] = [entry.raw.lstrip(" \t=")]
        elif key == "proxyjump":
            # ssh considers ProxyJump and ProxyCommand together: whichever came first wins.
            if "proxycommand" not in self.options and key not in self.options:
                self.options[key] = [entry.args[0]]
        elif key not in self.options:
            self.options[key] = list(entry.args)

    def hostname(self) -> str:
        """The host as Match host sees it: HostName so far with %h expanded, else the typed host."""
        value = self.options.get("hostname")
        if not value:
            return self.host
        return value[0].replace("%%", "\0").replace("%h", self.host).replace("\0", "%")


def _match(entry: Entry, state: Lookup) -> bool:
    args = entry.args
    i, result = 0, True
    while i < len(args):
        word = args[i]
        negate = word.startswith("!")
        criterion = word[1:].lower() if negate else word.lower()
        i += 1
        if criterion == "all":
            ok = True
        elif criterion in ("canonical", "final"):
            # readconf: both are "this is the final pass"; any `final`, even `!final`, asks for it (9.2).
            state.want_final |= criterion == "final"
            ok = state.final
        else:
            if i >= len(args):
                raise SshConfigError(f"{entry.where}: Match {criterion} needs an argument")
            arg = args[i]
            i += 1
            ok = _criterion(criterion, arg, state, entry.where)
        if ok == negate:
            result = False  # ssh evaluates every criterion (exec runs) but one miss is enough
    return result


def _criterion(criterion: str, arg: str, state: Lookup, where: str) -> bool:
    if criterion == "host":
        return host_matches(arg, state.hostname())
    if criterion == "originalhost":
        return host_matches(arg, state.original)
    if criterion == "user":
        user = state.user or (state.options.get("user") or [getpass.getuser()])[0]
        return host_matches(arg, user)
    if criterion == "localuser":
        return host_matches(arg, getpass.getuser())
    if criterion == "tagged":
        return host_matches(arg, (state.options.get("tag") or [""])[0])
    if criterion == "exec":
        from .ssh_tokens import expand  # tokens as ssh gives them to `Match exec`

        command = expand(arg, _exec_tokens(state))
        return subprocess.run(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    raise SshConfigError(f"{where}: unsupported Match criterion {criterion!r}")


def _exec_tokens(state: Lookup) -> dict[str, str]:
    from .ssh_tokens import tokens

    user = state.user or (state.options.get("user") or [getpass.getuser()])[0]
    port = state.port or int((state.options.get("port") or ["22"])[0])
    return tokens(state.hostname(), port, user, state.original)


def apply(entries: list[Entry], state: Lookup, active: bool, never: bool = False) -> None:
    """Walk entries as readconf does: Host/Match switch `active`; an Include inside an inactive block
    reads its files with nothing matching (SSHCONF_NEVERMATCH), and the block's state comes back after."""
    for entry in entries:
        if entry.keyword == "host":
            active = not never and _host_block(entry.args, state.host)
        elif entry.keyword == "match":
            active = not never and _match(entry, state)
        elif entry.keyword == "include":
            for child in entry.children:
                apply(child, state, active, never or not active)
        elif active:
            state.take(entry)


def _host_block(patterns: list[str], name: str) -> bool:
    # readconf's Host: case-sensitive match_pattern of the typed name, any positive and no negative.
    positive = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        body = pattern[1:] if negated else pattern
        if fnmatchcase(name, body.replace("[", "[[]")):
            if negated:
                return False
            positive = True
    return positive
