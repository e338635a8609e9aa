"""A per-stream fast path: a training loop prints the same line again and again with new numbers.

"step=41 loss=0.2312 lr=3e-4" and "step=42 loss=0.2298 lr=3e-4" share one *template* (the text
with every free-standing number cut out). The first line of a template is parsed in full; when
each value of its point is one of the line's numbers, as printed, the template gets a candidate
*recipe* (name -> which number); once the next line of that template, parsed in full too, reads
the same by the recipe, later lines are read by one regex split and a few conversions instead of
the whole parser. A derived value may equal a number on both lines by chance (1 / 1.00 s/it while
the speed stays 1.00; a sum of parts while one part stays 0): before a recipe is used, a probe line
(every number moved, its kind kept) must read by it as the full parser reads it. Lines whose point
is derived (a sum of parts, 1 / (s/it), a percentage) get no recipe and always take the full parser. A recipe is checked against the full
parser on every CHECK_EVERY-th use and dropped for good at the first difference, so a template
whose reading depends on its values (rare: the YOLO total test) falls back to the full parser.

A confirmed template also gets a whole-line regex (``template_regex``) when its text allows one:
``read_run`` reads a run of consecutive lines by a few recent templates' regexes, one C match
per line instead of the split and the lists, with the same counting and checking as ``parse``.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Pattern, Sequence, Tuple, Union

from .epochs import is_context_line
from .formats import value_dependent
from .template_regex import template_regex
from .values import Number, clean, finite_or_name

Values = Dict[str, Number]

# A number not inside a name ("acc1", "top5", "Acc@1" stay part of the template), with its unit
# left in the text ("433M", "3.21G", "8.21it/s"), thousands groups ("1,200") as one number. Group 1 is an int, group 2 any other number:
# split() gives text, int, other, text, int, other... (the group that did not match is None).
_NUMBER = re.compile(
    r"(?<![\w.@])(?:([-+]?(?:\d{1,3}(?:,\d{3})+|\d+))(?![\d.eE]|,\d)|([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?))(?![\d.])"
)
_INT_TEXT = re.compile(r"[-+]?\d+\Z")

MAX_LINE = 512  # longer lines are rare and not worth a template
MAX_TEMPLATES = 4096  # a stream whose lines never repeat must not grow the cache forever
CHECK_EVERY = 64
RECENT_FAST = 4  # the templates read_run tries, most recent first (a train line, an eval line...)
MAX_TRIES = 8  # a template whose first lines map ambiguously ("step 5 loss 5") is tried again

Recipe = List[Tuple[str, int, Callable[[str], Number]]]  # [] : the template's lines carry no metric
_UNCACHEABLE = None


def _to_float(text: str) -> Number:
    value = float(text)
    return value if value - value == 0.0 else finite_or_name(value)  # inf - inf and nan are nan


def _grouped(text: str) -> Number:
    return int(text.replace(",", ""))  # "1,200": the parser reads thousands groups as one number


def _converter(token: str) -> Callable[[str], Number]:
    if "," in token:
        return _grouped
    return int if _INT_TEXT.match(token) else _to_float


class TemplateCache:
    def __init__(self, full_parse: Callable[[str], Optional[Values]]) -> None:
        self._full = full_parse
        # Per template: a recipe in use, (candidates, tries), tries so far, or None (uncacheable:
        # always the full parser).
        self._recipes: Dict[str, Union[Recipe, Tuple[Candidates, int], int, None]] = {}
        self._uses = 0
        self._fast: Dict[str, _Fast] = {}  # per template in use, its whole-line reader (when it has one)
        self._recent: List[_Fast] = []  # the fast readers read_run tries, most recent first
        self.regex_reads = 0  # lines read_run read by a regex (what the bench and the tests look at)

    def read_run(self, lines: Sequence[str], start: int, out: List[Optional[Values]]) -> int:
        """Reads lines[start:] while they match a recent template's regex, appending each point to
        `out` exactly as ``parse`` would; returns the index of the first line it did not read."""
        i, end = start, len(lines)
        for fast in self._recent:
            match, build = fast.pattern.fullmatch, fast.build
            while i < end:
                line = lines[i]
                found = match(line)
                if found is None or len(line) > MAX_LINE:
                    break
                try:
                    point = build(found.groups())
                except Exception:  # (no regex admits such a number) parse() will say the same
                    break
                self._uses += 1
                if self._uses % CHECK_EVERY == 0:
                    full = self._full(line)
                    if full != point:
                        self._forget(fast.key)
                        out.append(full)
                        i += 1
                        break
                out.append(point)
                i += 1
            if i > start:
                break
        self.regex_reads += i - start
        return i

    def parse(self, line: str, fast: bool = True) -> Optional[Values]:
        """The line's point, by its template's recipe once confirmed; `fast=False`: no whole-line
        regex for its template (a line read_run must never take: a bar read with its frames)."""
        if len(line) > MAX_LINE:
            return self._full(line)
        parts = _NUMBER.split(line)
        ints = parts[1::3]
        numbers = [i if i is not None else f for i, f in zip(ints, parts[2::3])]  # noqa: B905
        # "1" and "1.0" read as int and float, and a zero or negative speed is no speed: their
        # lines get templates apart from the others (the parser may treat them apart).
        after = parts[3::3]
        kinds = [
            "z"
            if after[k][:1] in "its" and not n.lstrip("+-").strip("0.")
            else ("-" if n[0] == "-" else "") + ("i" if i is not None else "f")
            for k, (i, n) in enumerate(zip(ints, numbers))  # noqa: B905
        ]
        key = "\x00".join(parts[0::3]) + "".join(kinds)
        entry = self._recipes.get(key, 0)
        if isinstance(entry, list):
            self._uses += 1
            numbers.append("")  # where a recipe's constant words ("nan") read from
            point = _apply(entry, numbers)
            if self._uses % CHECK_EVERY == 0:
                full = self._full(line)
                if full != point:
                    self._forget(key)
                    return full
            self._use_fast(key)
            return point
        if entry is None:  # uncacheable
            return self._full(line)
        if len(self._recipes) >= MAX_TEMPLATES:
            self._recipes.clear()
            self._fast.clear()
            self._recent = []
        cleaned = clean(line)
        if value_dependent(cleaned) or is_context_line(cleaned):
            self._recipes[key] = _UNCACHEABLE
            return self._full(line)
        point = self._full(line)
        if isinstance(entry, tuple):
            candidates, tries = entry
            narrowed = _narrow(candidates, point, numbers)
            if narrowed is not None and all(len(found) == 1 for _, found, _ in narrowed):
                recipe = _recipe(narrowed, numbers)
                if not self._holds(recipe, parts[0::3], numbers, kinds):
                    self._recipes[key] = _UNCACHEABLE  # a derived value that equalled a number twice
                    return point
                self._recipes[key] = recipe  # confirmed by a second line and by the probe: in use
                if fast:
                    self._add_fast(key, parts[0::3], kinds, recipe)
                return point
        else:
            tries, narrowed = entry, None
        tries += 1
        if tries >= MAX_TRIES:
            self._recipes[key] = _UNCACHEABLE
            return point
        if narrowed is None:
            narrowed = _candidates(point, numbers)
        self._recipes[key] = (narrowed, tries) if narrowed is not None else tries
        return point

    def _holds(
        self, recipe: Recipe, texts: Sequence[str], numbers: Sequence[str], kinds: Sequence[str]
    ) -> bool:
        """The recipe reads the template's probe line (every number moved, its kind kept) as the full
        parser does. Two lines can agree by chance where a value is derived: `box_loss=1.5
        cls_loss=0.0` sums to the box loss while the class loss stays 0 (and 1.00 s/it is 1.00 it/s)."""
        probe = [
            token if kind == "z" else _moved(token, k)
            for k, (token, kind) in enumerate(zip(numbers, kinds))  # noqa: B905
        ]
        line = texts[0] + "".join(n + t for n, t in zip(probe, texts[1:]))  # noqa: B905
        parts = _NUMBER.split(line)
        if parts[0::3] != list(texts) or len(parts[1::3]) != len(numbers):
            return False  # the moved numbers read as another template: no proof, no recipe
        return self._full(line) == _apply(recipe, probe + [""])

    def _add_fast(self, key: str, texts: Sequence[str], kinds: Sequence[str], recipe: Recipe) -> None:
        int_indexes = [index for _, index, convert in recipe if convert is int]
        pattern = template_regex(texts, kinds, int_indexes, bool(recipe))
        if pattern is not None:
            self._fast[key] = _Fast(key, pattern, _builder(recipe, len(kinds)))
            self._use_fast(key)

    def _use_fast(self, key: str) -> None:
        fast = self._fast.get(key)
        if fast is not None and (not self._recent or self._recent[0] is not fast):
            self._recent = [fast] + [f for f in self._recent if f is not fast][: RECENT_FAST - 1]

    def _forget(self, key: str) -> None:
        """The template's recipe read a line unlike the full parser: the full parser from now on."""
        self._recipes[key] = _UNCACHEABLE
        fast = self._fast.pop(key, None)
        self._recent = [f for f in self._recent if f is not fast]


class _Fast:
    """A template's whole-line regex and the builder of its point from the regex's groups."""

    __slots__ = ("key", "pattern", "build")

    def __init__(
        self, key: str, pattern: Pattern[str], build: Callable[[Tuple[str, ...]], Optional[Values]]
    ) -> None:
        self.key, self.pattern, self.build = key, pattern, build


def _builder(recipe: Recipe, count: int) -> Callable[[Tuple[str, ...]], Optional[Values]]:
    """groups -> the point, as _apply reads it from the split's numbers (index `count`: a WORD's
    constant). One small function per recipe, written out (a dict display; a float converted in
    line, its non-finite check beside it): a generic loop over the recipe was a third of a flood
    line's cost."""
    if not recipe:
        return lambda groups: None
    names: Dict[str, object] = {"finite_or_name": finite_or_name}
    lines, items = [], []
    for k, (name, index, convert) in enumerate(recipe):
        text = "g[%d]" % index if index < count else "''"
        if convert is _to_float:
            lines.append("    v%d = float(%s)\n" % (k, text))
            items.append("%r: v%d if v%d - v%d == 0.0 else finite_or_name(v%d)" % (name, k, k, k, k))
        else:
            names["c%d" % k] = convert
            items.append("%r: c%d(%s)" % (name, k, text))
    source = "def build(g):\n%s    return {%s}\n" % ("".join(lines), ", ".join(items))
    exec(source, names)  # the names go in as str literals (%r); nothing else comes from the output
    return names["build"]  # type: ignore[return-value]


def _moved(token: str, k: int) -> str:
    """The number `token` moved by a step of its own (k: its place on the line), sign and kind kept."""
    sign = token[0] if token[0] in "+-" else ""
    if _INT_TEXT.match(token) or "," in token:
        return sign + str(int(token.lstrip("+-").replace(",", "")) + k + 1)
    return sign + repr(float(token.lstrip("+-")) + (k + 1) * 0.0625)


def _apply(recipe: Recipe, numbers: List[str]) -> Optional[Values]:
    if not recipe:
        return None
    return {name: convert(numbers[index]) for name, index, convert in recipe}


# Per value: its name, the numbers it may be (their indexes; WORD: the word in the template, such
# as "nan"), and the value the last line had.
Candidates = List[Tuple[str, List[int], Number]]
WORD = -1


def _candidates(point: Optional[Values], numbers: List[str]) -> Optional[Candidates]:
    """Which numbers each value may be; None when a value is none of them (derived: a sum...)."""
    if point is None:
        return []
    found: Candidates = []
    for name, value in point.items():
        indexes = [i for i, token in enumerate(numbers) if _same(_converter(token)(token), value)]
        if not indexes:
            if not isinstance(value, str):
                return None
            indexes = [WORD]  # "nan" printed as a word: part of the template itself
        found.append((name, indexes, value))
    return found


def _narrow(candidates: Candidates, point: Optional[Values], numbers: List[str]) -> Optional[Candidates]:
    """The candidates a new line of the template leaves; None when it reads another way."""
    if point is None or not candidates:
        return candidates if point is None and not candidates else None
    if [name for name, _, _ in candidates] != list(point):
        return None
    narrowed: Candidates = []
    for name, indexes, before in candidates:
        value = point[name]
        keep = [
            i
            for i in indexes
            if (_same(value, before) if i == WORD else _same(_converter(numbers[i])(numbers[i]), value))
        ]
        if not keep:
            return None
        narrowed.append((name, keep, value))
    return narrowed


def _recipe(candidates: Candidates, numbers: List[str]) -> Recipe:
    recipe: Recipe = []
    for name, (index,), value in candidates:
        if index == WORD:
            recipe.append((name, len(numbers), _constant(value)))
        else:
            recipe.append((name, index, _converter(numbers[index])))
    return recipe


def _constant(value: Number) -> Callable[[str], Number]:
    return lambda _text: value


def _same(a: Number, b: Number) -> bool:
    return type(a) is type(b) and a == b
