"""``LineParser``: ``parse_line`` for one job's output stream, with the context a line cannot carry.

Each line is still read on its own, except for what the lines before it say: a header line naming
columns (``tables``) for the rows under it; the rank a prefix names (``ranks``: each rank's lines
are read with their own context, other ranks' values as per-rank series); a bar's previous frame
(``progress``: one reading per counter position, the counter as the step; ``barsteps``: a
message printed between a bar's frames takes its step); the epoch a Keras
header gives the lines below it and steps that restart each epoch (``epochs``); a
stable-baselines3 table read at its closing rule (``rltable``). A line repeating an earlier
line's template with new numbers is read by that template's recipe (``templates``); lines read
with context never are. The supervisor keeps one ``LineParser`` per job; ``parse_line`` stays pure.
``parse_many`` reads a chunk's lines at once: runs of a known template by its whole-line regex,
the rest one by one.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from . import ranks
from .barsteps import BarSteps
from .epochs import Epochs
from .formats import bar_hint
from .parse import may_hold_point, parse_line
from .progress import Bars, may_be_bar
from .richbar import RichBars, may_be_rich, tqdm_form
from .rltable import RLTable, is_table_line
from .tables import Table
from .templates import TemplateCache
from .values import Number, clean

_DIGIT = re.compile(r"\d")
_MAX_HEADER = 400  # a header is one short line of column names
_HEADER_INITIALS = frozenset("EeSsIiGgNnBb\x1b")  # \x1b: a header in colour
_MAX_RANKS = 1024

Values = Dict[str, Number]


class _Context:
    """What one stream (one rank's lines, or the unprefixed ones) has said so far."""

    def __init__(self) -> None:
        self.table = Table()
        self.epochs = Epochs()
        self.bars = Bars()
        self.rich = RichBars()
        self.rl = RLTable()
        self.waiting = BarSteps()  # a message's point waiting for the bar drawn after it


class LineParser:
    def __init__(self) -> None:
        self._templates = TemplateCache(parse_line)
        self._main = _Context()
        self._ranks: Dict[int, _Context] = {}
        self._mean_seen = False  # a rank printed the mean loss over ranks: that is `loss`

    def parse_many(self, lines: Sequence[str]) -> List[Optional[Values]]:
        """The points of consecutive lines, each as ``parse`` would read it after the ones before."""
        out: List[Optional[Values]] = []
        i, end = 0, len(lines)
        read_run = self._templates.read_run
        main = self._main
        while i < end:
            if (
                main.table.columns is None
                and not main.rl.open
                and not main.waiting.after_bar
                and main.waiting.held is None
            ):
                # A template's line has numbers, so parse() would skip the header branch, and no
                # table is known: it would go to the templates (its hint passes may_hold_point).
                start = len(out)
                j = read_run(lines, i, out)
                if j > i:
                    if main.epochs.header is not None:  # a Keras header above: the lines' epoch
                        for k in range(j - i):
                            point = out[start + k]
                            if point is not None:
                                out[start + k] = main.epochs.place(clean(lines[i + k]).strip(), point)
                    i = j
                    continue
            out.append(self.parse(lines[i]))
            i += 1
        return out

    def parse(self, line: str) -> Optional[Values]:
        """The metric point of one output line, given the lines before it; never raises."""
        try:
            rank, rest = ranks.split(line)
            if rank is None:
                return self._main.waiting.settle(line, self._read(self._main, line))
            pieces = ranks.segments(rest)
            if len(pieces) > 1:  # another rank's write glued after this one's
                return self._glued(rank, pieces)
            context = self._context(rank)
            point = context.waiting.settle(rest, self._read(context, rest))
            return self._tag(point, rank, rest) if point else point
        except Exception:  # a parser bug must never take the supervisor down with it
            return None  # (not the line alone: a rank's values must never land in rank 0's names)

    def flush(self) -> List[Values]:
        """The points still waiting for a line after them (at the end of the output)."""
        out = []
        for rank, context in [(None, self._main)] + list(self._ranks.items()):
            held = context.waiting.flush()
            if held is not None:
                out.append(held if rank is None else ranks.tag(held, rank, own_series=self._mean_seen))
        return out

    def _glued(self, rank: int, pieces: List[str]) -> Optional[Values]:
        points = []
        for k, piece in enumerate(pieces):
            piece_rank, text = (rank, piece) if k == 0 else ranks.split(piece)
            if piece_rank is None:
                return None
            point = self._read(self._context(piece_rank), text)
            if point:
                points.append(self._tag(point, piece_rank, text))
        return ranks.merge(points) if points else None

    def _tag(self, point: Values, rank: int, text: str) -> Values:
        if ranks.states_mean(text):
            self._mean_seen = True
            tagged = ranks.tag(point, 0)  # the mean over ranks, whichever rank printed it
            tagged["rank"] = rank
            return tagged
        return ranks.tag(point, rank, own_series=self._mean_seen)

    def _context(self, rank: int) -> _Context:
        context = self._ranks.get(rank)
        if context is None:
            if len(self._ranks) >= _MAX_RANKS:
                self._ranks.clear()
            context = self._ranks[rank] = _Context()
        return context

    def _read(self, context: _Context, line: str) -> Optional[Values]:
        if _DIGIT.search(line) is None:
            # A header starts with an index word (epoch, step, iter, global_step, num_updates,
            # batch): the first letter rules out most lines before any work.
            # (an indented one may be a pandas frame's, naming its index anywhere)
            if len(line) < _MAX_HEADER and (line[:1] == " " or line.lstrip()[:1] in _HEADER_INITIALS):
                context.table.learn(clean(line).rstrip())
            if context.rl.open or line.lstrip()[:1] == "-":
                text = clean(line).strip()
                if is_table_line(text):
                    return context.rl.feed(text)
                context.rl.close()  # a table is printed in one go: any other line ends it
            return parse_line(line)
        first = line.lstrip()[:1]
        if context.rl.open or first == "|":
            text = clean(line).strip()
            if is_table_line(text):
                point = context.rl.feed(text)
                if point is not None or context.rl.open:
                    return point
            else:
                context.rl.close()
        if (first == "E" or (not first.isalnum() and "Epoch" in line)) and context.epochs.learn(
            clean(line).strip()
        ):
            return None
        if context.table.columns is not None:
            point = context.table.row(clean(line).rstrip())
            if point is not None:
                return point
        if "=" in line and bar_hint(line) and may_be_bar(clean(line).strip()):
            point = self._templates.parse(line, fast=False) if may_hold_point(line) else None
            return context.bars.place(clean(line).strip(), point)
        if may_be_rich(line):
            text = clean(line).strip()
            frame = tqdm_form(text)
            if frame is not None:  # its values named as the tqdm frame's, its step where proven
                return context.rich.place(text, self._templates.parse(frame, fast=False))
        if not may_hold_point(line):
            return None  # most output: cheaper to prove empty than to look up its template
        point = self._templates.parse(line)
        # (the templates' points are new dicts: placing them in place is safe)
        if point is not None and (
            context.epochs.header is not None or ("/" in line and "poch" in line.lower())
        ):
            point = context.epochs.place(clean(line).strip(), point)
        return point
