"""One regex per confirmed template: a line it matches in full has that template, proven, not guessed.

``TemplateCache`` finds a line's template by cutting out every number (``_NUMBER.split``) and
looking the rest up: a split, three list builds and a join per line. A flood of one template pays
that on every line. This module builds, once per template, a regex of the template's own text with
one group per number, such that a full match implies that ``_NUMBER.split`` would cut the line
into the same text and the same kinds of number (so it has the same template and recipe), and the
groups are its numbers. Where that cannot be shown from the template's text alone, no regex is
built and the template keeps the split path. The proof, piece by piece:

* no number can start inside a text piece, whatever numbers surround it: every character that
  could begin one (a digit, a sign, a dot) has, inside the piece, a character before it that
  forbids a start there (``[\\w.@]``), or (a sign or dot) a character after it that is no digit;
* each number group is ``_NUMBER`` for that kind alone; its lookarounds look at the template's
  own text, which passed them in the line the template came from; a float group needs a dot or an
  exponent (so ``_NUMBER`` would not read it as an int), and no piece after a float starts with an
  exponent letter nor any piece after a number with a digit, so a group's extent is the one
  ``_NUMBER`` takes;
* the kinds ``TemplateCache`` derives from the text after a number (``z``: a zero before "it/s",
  "s/it" or at the end; a leading minus) are asserted by lookaheads on that known next text;
* a number a recipe reads with ``int`` must be plain digits (``int("1,200")`` would raise);
* ``LineParser`` sends a line to templates only when ``may_hold_point`` says it may hold a point:
  for a template with a non-empty recipe the regex is built only when one text piece alone
  already contains the measurement hint (or a brace) that makes ``may_hold_point`` true, and
  the text has no escape or backspace (which ``clean`` would remove).
"""

from __future__ import annotations

import re
from typing import List, Optional, Pattern, Sequence

from .canonical import SIGNAL_HINT

_INT = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_INT_END = r"(?![\d.eE]|,\d)"
_EXP = r"(?:[eE][-+]?\d+)"
# A float with a dot or an exponent: _NUMBER never reads it as an int (its int stops at the dot or
# the "e", where its int lookahead fails), so no "not an int here" test is needed.
_FLOAT = r"(?:\d+\.\d*" + _EXP + r"?|\.\d+" + _EXP + r"?|\d+" + _EXP + ")"
_NOT_INT_HERE = r"(?![-+]?" + _INT + _INT_END + ")"  # where _NUMBER would read an int, no float
_CAN_START = frozenset("0123456789+-.")
_STOPS_START = re.compile(r"[\w.@]")


def _piece_is_inert(piece: str) -> bool:
    """No number can start inside this text piece, whatever characters come before and after it."""
    for i, char in enumerate(piece):
        if char not in _CAN_START:
            continue
        if i > 0 and _STOPS_START.match(piece[i - 1]):
            continue  # "acc1", "top5", "Acc@1", "s/it." : a number never starts after these
        if char in "+-." and i + 1 < len(piece) and piece[i + 1] not in "0123456789.":
            continue  # " - loss", "a. b": a sign or dot not followed by a digit starts nothing
        return False
    return True


def _number_group(kind: str, after: str, int_only: bool) -> str:
    r"""The group for one number of kind `kind` followed by the text `after` (`int_only`: plain
    digits). _NUMBER's lookbehind and lookaheads look at the template's own text around the number,
    the same in every line of it, so they are left out, except an int's ",\d" test where the
    next number's first character is part of it."""
    if kind == "z":  # (`after` starts with i, t, s or is empty: the "z" test held)
        return "(" + (r"[-+]?0+" if int_only else r"[-+]?(?:0+\.0*|\.0+|0+)") + ")"
    sign = "-" if kind.startswith("-") else r"\+?"
    zero = after[:1] in "its"  # (an empty `after` too): a zero here would be kind "z"
    not_zero = r"(?![-+]?[0.]+" + (re.escape(after[:1]) if after else r"\Z") + ")" if zero else ""
    if kind.endswith("i"):
        end = _INT_END if after[:1] == "," else ""
        return not_zero + "(" + sign + (r"\d+" if int_only else _INT) + ")" + end
    if int_only:  # "1" read as a float only because ",2" follows it
        return not_zero + _NOT_INT_HERE + "(" + sign + r"\d+" + ")"
    return not_zero + "(" + sign + _FLOAT + ")"


def template_regex(
    texts: Sequence[str], kinds: Sequence[str], int_indexes: Sequence[int], reads_values: bool
) -> Optional[Pattern[str]]:
    """The full-line regex of a template (texts around len(kinds) numbers), or None when its
    equivalence with the split path cannot be shown from the text alone."""
    if not kinds or len(texts) != len(kinds) + 1:
        return None
    joined = "".join(texts)
    if "\x1b" in joined or "\b" in joined:
        return None
    if reads_values and "{" not in joined and not any(SIGNAL_HINT.search(t.lower()) for t in texts):
        return None
    if not all(_piece_is_inert(t) for t in texts):
        return None
    parts: List[str] = [re.escape(texts[0])]
    for k, kind in enumerate(kinds):
        after = texts[k + 1]
        if not kind.endswith("i") and after[:1] in ("e", "E"):
            return None  # "1.5" then "e3x": only _NUMBER's own greed decides; keep the split path
        if after[:1] and after[0] in "0123456789.":
            return None  # (a number's lookahead forbids this: never from _NUMBER.split)
        if k + 1 < len(kinds) and not after:
            return None  # two numbers with nothing between cannot come from _NUMBER: be safe
        parts.append(_number_group(kind, after, k in int_indexes))
        parts.append(re.escape(after))
    return re.compile("".join(parts), re.DOTALL)
