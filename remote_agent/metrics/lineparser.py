"""``LineParser``: ``parse_line`` for one job's output stream, with the context a line cannot carry.

Each line is still read on its own, except that a header line naming columns (see ``tables``) is
remembered, so that the rows printed under it are read by those names, and that a line repeating
an earlier line's template with new numbers is read by that template's recipe (``templates``). The supervisor keeps one
``LineParser`` per job; ``parse_line`` stays pure for everything else. ``parse_many`` reads a
chunk's lines at once: runs of a known template by its whole-line regex, the rest one by one.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from .parse import may_hold_point, parse_line
from .tables import Table
from .templates import TemplateCache
from .values import Number, clean

_DIGIT = re.compile(r"\d")
_MAX_HEADER = 400  # a header is one short line of column names
_HEADER_INITIALS = frozenset("EeSsIiGgNnBb\x1b")  # \x1b: a header in colour


class LineParser:
    def __init__(self) -> None:
        self._table = Table()
        self._templates = TemplateCache(parse_line)

    def parse_many(self, lines: Sequence[str]) -> List[Optional[Dict[str, Number]]]:
        """The points of consecutive lines, each as ``parse`` would read it after the ones before."""
        out: List[Optional[Dict[str, Number]]] = []
        i, end = 0, len(lines)
        read_run = self._templates.read_run
        while i < end:
            if self._table.columns is None:
                # A template's line has numbers, so parse() would skip the header branch, and no
                # table is known: it would go to the templates (its hint passes may_hold_point).
                j = read_run(lines, i, out)
                if j > i:
                    i = j
                    continue
            out.append(self.parse(lines[i]))
            i += 1
        return out

    def parse(self, line: str) -> Optional[Dict[str, Number]]:
        """The metric point of one output line, given the lines before it; never raises."""
        try:
            if _DIGIT.search(line) is None:
                # A header starts with an index word (epoch, step, iter, global_step, num_updates,
                # batch): the first letter rules out most lines before any work.
                if len(line) < _MAX_HEADER and line.lstrip()[:1] in _HEADER_INITIALS:
                    self._table.learn(clean(line).strip())
                return parse_line(line)
            if self._table.columns is not None:
                point = self._table.row(clean(line).strip())
                if point is not None:
                    return point
            if not may_hold_point(line):
                return None  # most output: cheaper to prove empty than to look up its template
            return self._templates.parse(line)
        except Exception:  # a parser bug must never take the supervisor down with it
            return parse_line(line)
