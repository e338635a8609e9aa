"""`--env-file FILE`: a job's variables from a dotenv file, read strictly.

The syntax python-dotenv and docker compose read: `KEY=value`, `export KEY=value`, blank lines and
`#` comments (in an unquoted value, from a `#` after a space), single quotes (literal) and double
quotes (`\\n`, `\\t`, `\\r`, `\\"`, `\\\\` escapes), a quoted value may span lines. Values are taken
as written: no `${VAR}` expansion (a secret holding `$` stays whole). Unlike python-dotenv, which
logs a warning and skips a line it cannot read, a bad line stops the launch, naming FILE:LINE —
and never the line's text, which may hold a secret.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import EXIT_USAGE, GpudeckError

_ASSIGNMENT = re.compile(r"[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=(.*)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_COMMENT = re.compile(r"[ \t]#")
MAX_BYTES = 1 << 20


def read_env_file(path: str, label: str = "--env-file") -> tuple[tuple[str, str], ...]:
    """(name, value) pairs in file order (a later line wins); GpudeckError (usage) naming
    `label FILE:LINE` for a line it cannot read."""
    file = Path(path).expanduser()
    try:
        with open(file, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise GpudeckError(f"{label} {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    if len(raw) > MAX_BYTES:
        raise GpudeckError(f"{label} {path}: over {MAX_BYTES >> 20} MiB: not an env file", EXIT_USAGE)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise GpudeckError(f"{label} {path}:{line}: not UTF-8 text", EXIT_USAGE) from None
    return parse_env_text(text, f"{label} {path}")


def parse_env_text(text: str, where: str) -> tuple[tuple[str, str], ...]:
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    env: dict[str, str] = {}
    i = 0
    while i < len(lines):
        number, line = i + 1, lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ASSIGNMENT.fullmatch(line)
        if match is None:
            raise _bad(where, number, _what_is_wrong(line))
        key, rest = match.groups()
        body = rest.lstrip(" \t")
        if body[:1] in ("'", '"'):
            value, i = _quoted(lines, i, body, where, number)
        else:
            value = _COMMENT.split(rest, maxsplit=1)[0].strip()
        if "\0" in value:
            raise _bad(where, number, f"{key}: a NUL character")
        env[key] = value
    return tuple(env.items())


def _quoted(lines: list[str], i: int, body: str, where: str, number: int) -> tuple[str, int]:
    """The quoted value starting `body` (its text may go on over the next lines) and the index of
    the line after it."""
    quote, text, parts = body[0], body[1:], []
    while True:
        end = _closing(text, quote)
        if end >= 0:
            parts.append(text[:end])
            after = text[end + 1 :].strip()
            if after and not after.startswith("#"):
                raise _bad(where, number, "text after the closing quote")
            break
        parts.append(text)
        if i >= len(lines):
            raise _bad(where, number, f"no closing {quote}")
        text, i = lines[i], i + 1
    value = "\n".join(parts)
    return (_unescape(value) if quote == '"' else value), i


def _closing(text: str, quote: str) -> int:
    """The index of the quote that closes `text`, or -1; in double quotes a backslash escapes."""
    j = 0
    while j < len(text):
        if quote == '"' and text[j] == "\\":
            j += 2
            continue
        if text[j] == quote:
            return j
        j += 1
    return -1


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), value, flags=re.DOTALL)


def _what_is_wrong(line: str) -> str:
    name = line.strip().removeprefix("export").strip().partition("=")[0].strip()
    if "=" not in line:
        return "expected KEY=value"
    return (
        "not a variable name before '=' (letters, digits and _, not starting with a digit)"
        if name
        else "no name before '='"
    )


def _bad(where: str, number: int, why: str) -> GpudeckError:
    return GpudeckError(f"{where}:{number}: {why}", EXIT_USAGE)
