"""ssh_config(5) read the way OpenSSH 9.2's readconf.c reads it, checked against `ssh -G` in the tests.

paramiko's SSHConfig differs from ssh in ways that matter here (no Include, no Match user/
originalhost, a later `Host *` value overriding an earlier one for some keywords, ProxyCommand
split into words), so the rules are OpenSSH's own:

- a file is refused whole, as ssh refuses it, for one bad line: a keyword ssh does not know (a UTF-8
  byte order mark makes the first one unknown) unless `IgnoreUnknown` names it, no argument, an
  unclosed quote, too many arguments, a bad `Match` or `ProxyJump`; also in an included file;
- lines end at `\n` only; words are cut as ssh cuts them (ssh_words.py);
- the first value obtained for a keyword wins; IdentityFile and CertificateFile accumulate;
- `Host` patterns match the name as typed (case-sensitive), `!pattern` vetoes the block;
- `Match` (ssh_match.py) supports all, host, originalhost, user, localuser, exec, canonical, final and
  tagged (the `Tag` keyword, OpenSSH >= 9.4); canonical and final match in the second pass that ssh
  makes after canonicalizing (ssh_canonical.py), in which `Host` sees that name;
- `Include` is read where it stands and, inside a Host/Match block, applies only when that block
  does; relative paths are relative to ~/.ssh (user config) or /etc/ssh (system config).
"""

from __future__ import annotations

import getpass
import glob
import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from ..printable import printable
from .known_hosts_file import host_matches
from .ssh_home import expand_tilde
from .ssh_jump import keep as keep_jump
from .ssh_keywords import ALIASES, ARITY, IGNORED, MANY, RAW
from .ssh_match import Criterion, matches, parse_match
from .ssh_words import WHITESPACE, QuoteError, argv_split, ascii_lower, strdelim

MAX_INCLUDE_DEPTH = 16
MULTI = frozenset({"identityfile", "certificatefile"})  # these accumulate; every other keyword: first wins


class SshConfigError(Exception):
    pass


@dataclass
class Entry:
    keyword: str  # lower-case, an alias already read as the keyword it stands for
    args: list[str]
    raw: str  # the text after the keyword (ProxyCommand, ProxyJump: as ssh keeps it)
    where: str  # file:line, for error messages
    children: list[list[Entry]] = field(default_factory=list)  # Include: one list per file
    criteria: list[Criterion] = field(default_factory=list)  # Match
    known: bool = True  # False: a keyword ssh does not know (refused unless IgnoreUnknown names it)


def split_args(text: str, where: str) -> list[str]:
    """OpenSSH's argv_split(…, terminate_on_comment=1)."""
    try:
        return argv_split(text)
    except QuoteError:
        raise SshConfigError(f"{where}: invalid quotes") from None


def _keyword(line: str, where: str) -> tuple[str, str] | None:
    """(keyword, rest) as process_config_line finds them, or None for a blank or comment line."""
    line = line.split("\0", 1)[0]  # C strings end there
    line = line[:1] + line[1:].rstrip(WHITESPACE + "\f")
    try:
        keyword, rest = strdelim(line)
        if keyword == "":
            keyword, rest = strdelim(rest)
    except QuoteError:
        return None  # strdelim's NULL: ssh skips the line
    if not keyword or keyword.startswith("#"):
        return None
    keyword = ascii_lower(keyword)
    rest = (rest or "").lstrip(WHITESPACE)
    if not rest:
        raise SshConfigError(f'{where}: no argument after keyword "{_shown(keyword)}"')
    return keyword, rest


def _shown(keyword: str) -> str:
    bom = (
        " (the file starts with a UTF-8 byte order mark, which ssh does not skip)"
        if keyword[:1] == "\ufeff"
        else ""
    )
    return printable(keyword.replace("\ufeff", "\\ufeff")) + bom


def _entry(keyword: str, rest: str, where: str) -> Entry:
    args = split_args(rest, where)
    if keyword not in ARITY:
        return Entry(keyword, args, rest, where, known=False)
    most = ARITY[keyword]
    if keyword == "match":
        try:
            return Entry(keyword, args, rest, where, criteria=parse_match(rest))
        except ValueError as exc:
            raise SshConfigError(f"{where}: Bad Match condition: {printable(str(exc))}") from None
    if keyword in RAW:
        raw = rest.lstrip(WHITESPACE + "=")
        if keyword == "proxyjump":
            kept = keep_jump(raw)
            if kept is None:
                raise SshConfigError(f'{where}: Invalid ProxyJump "{printable(raw)}"')
            raw = kept
        return Entry(keyword, args, raw, where)
    if keyword in IGNORED:
        return Entry(keyword, [], rest, where)
    if most is MANY:
        if "" in args:
            raise SshConfigError(f"{where}: keyword {keyword} empty argument")
    elif not args or args[0] == "":
        raise SshConfigError(f"{where}: {keyword}: missing argument")
    elif len(args) > most:
        raise SshConfigError(f"{where}: keyword {keyword} extra arguments at end of line")
    return Entry(ALIASES.get(keyword, keyword), args, rest, where)


def parse_text(text: str, name: str, base: Path, depth: int = 0) -> list[Entry]:
    """Every line of one file (and the files it includes); SshConfigError for the first line ssh
    would refuse."""
    if depth > MAX_INCLUDE_DEPTH:
        raise SshConfigError(f"{name}: Include nested deeper than {MAX_INCLUDE_DEPTH} (a loop?)")
    entries: list[Entry] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        where = f"{name}:{lineno}"
        parsed = _keyword(line, where)
        if parsed is None:
            continue
        entry = _entry(*parsed, where)
        if entry.keyword == "include":
            for pattern in entry.args:
                pattern = expand_tilde(pattern)
                if not os.path.isabs(pattern):
                    pattern = str(base / pattern)
                for path in sorted(glob.glob(pattern)):
                    try:
                        sub = Path(path).read_bytes().decode("utf-8", errors="replace")
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
        elif key in ("proxycommand", "proxyjump"):
            # ssh considers ProxyJump and ProxyCommand together: whichever came first wins.
            if "proxycommand" not in self.options and "proxyjump" not in self.options:
                self.options[key] = [entry.raw]
        elif key not in self.options:
            self.options[key] = [entry.raw] if key in RAW else list(entry.args)

    def remote_user(self) -> str:
        """The user as `Match user` and %r see it so far: the typed one, User, else the local user."""
        return self.user or (self.options.get("user") or [getpass.getuser()])[0]

    def hostname(self) -> str:
        """The host as Match host sees it: HostName so far with %h expanded, else the typed host."""
        value = self.options.get("hostname")
        if not value:
            return self.host
        return value[0].replace("%%", "\0").replace("%h", self.host).replace("\0", "%")


def apply(entries: list[Entry], state: Lookup, active: bool, never: bool = False) -> None:
    """Walk entries as readconf does: Host/Match switch `active`; an Include inside an inactive block
    reads its files with nothing matching (SSHCONF_NEVERMATCH), and the block's state comes back after."""
    for entry in entries:
        if entry.keyword == "host":
            active = not never and _host_block(entry.args, state.host)
        elif not entry.known:
            _unknown(entry, state)
        elif entry.keyword == "match":
            try:
                found = matches(entry.criteria, state)  # evaluated (exec run) even where it cannot apply
            except ValueError as exc:
                raise SshConfigError(f"{entry.where}: {printable(str(exc))}") from None
            active = not never and found
        elif entry.keyword == "include":
            for child in entry.children:
                apply(child, state, active, never or not active)
        elif active:
            state.take(entry)


def _unknown(entry: Entry, state: Lookup) -> None:
    """A keyword ssh does not know refuses the file unless an IgnoreUnknown read before names it."""
    ignore = state.options.get("ignoreunknown")
    if ignore and host_matches(ignore[0].lower(), entry.keyword):
        return
    raise SshConfigError(f"{entry.where}: Bad configuration option: {_shown(entry.keyword)}")


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
