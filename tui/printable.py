"""The one sanitiser for untrusted text bound for a terminal (CLI and TUI alike).

A job's name and argv, a host's target, a remote's error, a cloud tag: any of them can hold ESC,
a carriage return or a bidi override that a terminal would act on (clear the screen, rewrite a line,
reorder what is shown). Each such character is shown escaped instead, as Python writes it in a
string (`\\x1b`, `\\n`, `\\u202e`), so what is printed is what was sent, and nothing more happens.
JSON output needs none of this (json.dumps escapes them); a job's own output (`logs`) is the
program's and stays raw, as `tail` and `docker logs` leave it.
"""

from __future__ import annotations

import re
import sys

# C0 and C1 controls and DEL; the Unicode line and paragraph separators; the bidi embeddings,
# overrides and isolates ("Trojan Source") and the invisible direction marks.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    named = _NAMED.get(c)
    if named:
        return named
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every character a terminal would act on shown escaped; the rest as it is."""
    return _UNSAFE.sub(_escape, text)


def warn(line: str) -> None:
    """One line on stderr, printable, in one write (a reconnecting client's status line, written
    from another thread, must not land inside it)."""
    sys.stderr.write(printable(line) + "\n")
    sys.stderr.flush()
