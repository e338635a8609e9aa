"""How OpenSSH cuts an ssh_config line into words (misc.c: strdelim, argv_split, rtrim), byte for byte.

Two splitters, because readconf.c uses both: the keyword and `Match`'s criteria go through strdelim
(whitespace or one `=`, only "double" quotes, no escapes); every other keyword's arguments through
argv_split ('single' and "double" quotes, backslash escapes, `#` at a word's start ends the line).
"""

from __future__ import annotations

WHITESPACE = " \t\r\n"


class QuoteError(ValueError):
    """A quote that is never closed."""


def strdelim(s: str | None) -> tuple[str | None, str | None]:
    """(the next word, the rest): strdelim(&s). The word is None for an unclosed "quote; the rest is
    None when nothing follows."""
    if s is None:
        return None, None
    i = next((k for k, c in enumerate(s) if c in WHITESPACE + '"='), -1)
    if i < 0:
        return s, None
    if s[i] == '"':
        s = s[:i] + s[i + 1 :]  # the quote goes; the word runs to the next one
        end = s.find('"', i)
        if end < 0:
            raise QuoteError(s)
        return s[:end], s[end + 1 :].lstrip(WHITESPACE)
    word, rest = s[:i], s[i + 1 :].lstrip(WHITESPACE)
    if s[i] != "=" and rest.startswith("="):  # `Keyword = value`: one `=` may follow the blank
        rest = rest[1:].lstrip(WHITESPACE)
    return word, rest


def argv_split(s: str) -> list[str]:
    """argv_split(s, …, terminate_on_comment=1). Raises QuoteError for an unclosed quote."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        if s[i] in " \t":
            i += 1
            continue
        if s[i] == "#":
            break
        word: list[str] = []
        quote = ""
        while i < n:
            c = s[i]
            if c == "\\":
                nxt = s[i + 1] if i + 1 < n else ""
                if nxt in ("'", '"', "\\") or (not quote and nxt == " "):
                    i += 1
                    c = nxt  # the escaped character, as it is
                word.append(c)  # an unknown escape keeps its backslash
            elif not quote and c in " \t":
                break
            elif not quote and c in "'\"":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                word.append(c)
            i += 1
        if quote:
            raise QuoteError(s)
        out.append("".join(word))
    return out


def ascii_lower(word: str) -> str:
    """C's tolower in the C locale: only A-Z change."""
    return word.translate(_LOWER)


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def rtrim_bug(s: str) -> str:
    """misc.c's rtrim as 9.2 has it: it blanks every whitespace character from the end down to the
    second, not only the trailing ones, so the text ends at its first inner blank (ssh -G shows it)."""
    for i in range(1, len(s)):
        if s[i] in " \t\n\v\f\r":
            return s[:i]
    return s
