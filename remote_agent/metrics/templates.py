"""A per-stream fast path: a training loop prints the same line again and again with new numbers.

"step=41 loss=0.2312 lr=3e-4" and "step=42 loss=0.2298 lr=3e-4" share one *template* (the text
with every free-standing number cut out). The first line of a template is parsed in full; when
each value of its point is one of the line's numbers, as printed, the template gets a candidate
*recipe* (name -> which number); once the next line of that template, parsed in full too, reads
the same by the recipe, later lines are read by one regex split and a few conversions instead of
the whole parser (the second line catches a derived value that equalled a number by chance:
1 / 1.00 s/it). Lines whose point is derived (a sum of parts, 1 / (s/it), a
percentage) get no recipe and always take the full parser. A recipe is checked against the full
parser on every CHECK_EVERY-th use and dropped for good at the first difference, so a template
whose reading depends on its values (rare: the YOLO total test) falls back to the full parser.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple, Union

from .formats import value_dependent
from .values import Number, clean, finite_or_name

Values = Dict[str, Number]

# A number not inside a name ("acc1", "top5", "Acc@1" stay part of the template), with its unit
# left in the text ("433M", "3.21G", "8.21it/s"). Group 1 is an int, group 2 any other number:
# split() gives text, int, other, text, int, other... (the group that did not match is None).
_NUMBER = re.compile(
    r"(?<![\w.@])(?:([-+]?\d+)(?![\d.eE])|([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?))(?![\d.])"
)
_INT_TEXT = re.compile(r"[-+]?\d+\Z")

MAX_LINE = 512  # longer lines are rare and not worth a template
MAX_TEMPLATES = 4096  # a stream whose lines never repeat must not grow the cache forever
CHECK_EVERY = 64
MAX_TRIES = 8  # a template whose first lines map ambiguously ("step 5 loss 5") is tried again

Recipe = List[Tuple[str, int, Callable[[str], Number]]]
_NO_POINT: Recipe = []  # the template's lines carry no metric
_UNCACHEABLE = None


def _to_float(text: str) -> Number:
    value = float(text)
    return value if value - value == 0.0 else finite_or_name(value)  # inf - inf and nan are nan


def _converter(token: str) -> Callable[[str], Number]:
    return int if _INT_TEXT.match(token) else _to_float


class TemplateCache:
    def __init__(self, full_parse: Callable[[str], Optional[Values]]) -> None:
        self._full = full_parse
        # Per template: a recipe in use, (a candidate recipe, tries), tries so far, or None
        # (uncacheable: always the full parser).
        self._recipes: Dict[str, Union[Recipe, Tuple[Recipe, int], int, None]] = {}
        self._uses = 0

    def parse(self, line: str) -> Optional[Values]:
        if len(line) > MAX_LINE or value_dependent(clean(line)):
            return self._full(line)
        parts = _NUMBER.split(line)
        ints = parts[1::3]
        numbers = [i if i is not None else f for i, f in zip(ints, parts[2::3])]  # noqa: B905
        # "1" and "1.0" read as int and float, zero and negative speeds are no speed: their lines
        # get templates apart from the others (the parser may treat them apart).
        kinds = [
            ("-" if n[0] == "-" else "") + ("i" if i is not None else "f")
            if n.lstrip("+-").strip("0.")
            else "z"
            for i, n in zip(ints, numbers)  # noqa: B905
        ]
        key = "\x00".join(parts[0::3]) + "".join(kinds)
        entry = self._recipes.get(key, 0)
        if isinstance(entry, list):
            self._uses += 1
            point = _apply(entry, numbers)
            if self._uses % CHECK_EVERY == 0:
                full = self._full(line)
                if full != point:
                    self._recipes[key] = _UNCACHEABLE
                    return full
            return point
        point = self._full(line)
        if entry is None:  # uncacheable
            return point
        if isinstance(entry, tuple):
            candidate, tries = entry
            if _apply(candidate, numbers) == point:
                self._recipes[key] = candidate  # a second line read the same way: in use from now
                return point
        else:
            tries = entry
        if len(self._recipes) >= MAX_TEMPLATES:
            self._recipes.clear()
        tries += 1
        learned = _learn(point, numbers)
        if learned is not None and tries < MAX_TRIES:
            self._recipes[key] = (learned, tries)  # to be confirmed by the next line of the template
        else:
            self._recipes[key] = tries if tries < MAX_TRIES else _UNCACHEABLE
        return point


def _apply(recipe: Recipe, numbers: List[str]) -> Optional[Values]:
    if not recipe:
        return None
    return {name: convert(numbers[index]) for name, index, convert in recipe}


def _learn(point: Optional[Values], numbers: List[str]) -> Optional[Recipe]:
    """Which number each value is; None when a value is derived or could be more than one number."""
    if point is None:
        return _NO_POINT
    recipe: Recipe = []
    for name, value in point.items():
        if isinstance(value, str):
            return None  # "nan"/"inf" are words: their lines have another template anyway
        found = [i for i, token in enumerate(numbers) if _same(_converter(token)(token), value)]
        if len(found) != 1:
            return None
        recipe.append((name, found[0], _converter(numbers[found[0]])))
    return recipe


def _same(a: Number, b: Number) -> bool:
    return type(a) is type(b) and a == b
