"""Output read a chunk at a time (#13) gives exactly what reading it line by line gave: the same
lines, the same points in the same key order, the same journal records, the same parser state."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_metrics_templates import _corpus

from remote_agent.metrics import LineParser, parse_line, templates
from remote_agent.metrics.template_regex import template_regex
from remote_agent.metrics.templates import TemplateCache
from remote_agent.storage.layout import JobFiles
from remote_agent.supervision.lines import LineSplitter, strip_ansi
from remote_agent.supervision.supervisor import Supervisor

# Number shapes that make templates apart (int/float, sign, zero before it/s, groups, exponents).
_SHAPES = (
    "7",
    "41",
    "0",
    "0.0",
    ".0",
    "-0",
    "+3",
    "2.",
    "0.25",
    "-1.5",
    "3e-4",
    "1.5E+3",
    "1,200",
    "12,345,678",
    "1e999",
    "nan",
    "inf",
)
# Layouts of real training lines (Keras, timm, tqdm postfix, mmengine, nanoGPT...) with @ for a number.
_LAYOUTS = (
    "step=@ loss=@",
    "Epoch @/@ - loss: @ - accuracy: @",
    "@it/s loss=@",
    "[@] loss @ lr @",
    "iter @: loss @, time @ms, mfu @%",
    "step @ loss @ grad_norm @ top5 @ acc1 @",
    "@, loss=@, @it/s",
    "loss=@ (@) lr=@e-4",
    "  @/@ [====] - @s @ms/step - loss: @",
    "Train: [@]  Loss: @  Time: @s  Mem: @M",
    '{"step": @, "loss": @}',
    "@ @ @",
    "loss @-@",
    "Acc@1 @ Acc@5 @ loss @",
    "loss=@,@ acc=@",
    "loss:@ nan @",
    "epoch @ loss @ val_loss @ tok/s @",
    "loss=@e@",
    "x loss=@.@",
    "@ s/it loss @",
    "{'loss': @, 'learning_rate': @, 'epoch': @}",
    "loss @ +@",
    "| @ | @ | @ |",
)


def _line_by_line(lines: list[str]) -> list:
    parser = LineParser()
    return [parser.parse(line) for line in lines]


def _in_chunks(lines: list[str], rnd: random.Random) -> list:
    parser = LineParser()
    out: list = []
    i = 0
    while i < len(lines):
        step = rnd.choice((1, 2, 7, 64, 500))
        out += parser.parse_many(lines[i : i + step])
        i += step
    return out


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x == y and (x is None or list(x) == list(y))  # key order too: it is the journal's bytes


def _flood(rnd: random.Random, n: int) -> list[str]:
    lines = []
    while len(lines) < n:
        layout = rnd.choice(_LAYOUTS)
        for _ in range(rnd.choice((1, 3, 80))):  # runs of one template, as training loops print
            lines.append(
                re.sub(
                    "@",
                    lambda _: (
                        rnd.choice(_SHAPES)
                        if rnd.random() < 0.2
                        else str(round(rnd.random() * 10 ** rnd.randint(0, 4), rnd.randint(0, 5)))
                    ),
                    layout,
                )
            )
    return lines


def test_chunks_read_the_corpus_with_new_numbers_as_line_by_line() -> None:
    rnd = random.Random(7)
    corpus = _corpus()
    lines = [
        re.sub(r"\d", lambda _: str(rnd.randint(0, 9)), line) if r else line
        for r in range(3)
        for line in corpus
    ]
    _same(_in_chunks(lines, rnd), _line_by_line(lines))


@pytest.mark.slow
def test_chunks_read_floods_of_every_number_shape_as_line_by_line() -> None:
    rnd = random.Random(11)
    lines = _flood(rnd, 20000)
    batched = _in_chunks(lines, rnd)
    _same(batched, _line_by_line(lines))
    assert sum(p is not None for p in batched) > 10000


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_LAYOUTS), st.lists(st.sampled_from(_SHAPES), min_size=8, max_size=8)),
        min_size=1,
        max_size=40,
    ),
    st.integers(min_value=1, max_value=9),
)
def test_any_mix_of_layouts_and_number_shapes_reads_as_line_by_line(rows: list, repeat: int) -> None:
    lines = []
    for layout, shapes in rows:
        for r in range(repeat):
            numbers = iter(shapes[r % 3 :] + shapes)
            lines.append(re.sub("@", lambda _, numbers=numbers: next(numbers), layout))
    _same(_in_chunks(lines, random.Random(repeat)), _line_by_line(lines))


# Realistic lines whose derived value equals a printed number for a while: a loss summed from parts
# while one part is still 0, an it/s taken from a speed printed as 1.00 s/it. Then the numbers move.
_BY_CHANCE = [
    "box_loss={a:.4f} cls_loss={z:.1f} dfl_loss={c:.4f} step={i}",
    "steps:  {p}%| | {i}/1000 [02:00<18:00,  {s:.2f}s/it, avr_loss={c:.4f}]",
]


def _by_chance(rnd: random.Random, n: int, zero: bool) -> list[str]:
    return [
        layout.format(
            a=rnd.random(),
            z=0.0 if zero else rnd.random(),
            c=rnd.random(),
            i=i,
            p=i // 10,
            s=1.0 if zero else 1 + rnd.random(),
        )
        for i in range(n)
        for layout in _BY_CHANCE
    ]


def _distinct(n: int) -> list[str]:
    """n lines of n templates (the words differ, not only the numbers): enough to overflow the cache."""
    return [f"shard_{''.join(chr(97 + int(d)) for d in str(k))} loss={k / 7:.4f} step={k}" for k in range(n)]


def test_the_fast_path_reads_as_the_full_parser_before_and_after_templates_are_forgotten() -> None:
    # The same lines through parse_many (runs by a template's regex, in chunks) and through the full
    # per-line parser must give the same points, key order included: the corpus with new numbers,
    # values derived by chance, and more distinct templates than the cache keeps (it forgets them all),
    # then the same templates again (learnt anew, or read by a stale regex if one survived).
    rnd = random.Random(5)
    corpus = _corpus()

    def varied() -> list[str]:
        return [re.sub(r"\d", lambda _: str(rnd.randint(0, 9)), line) for line in corpus]

    def loop() -> list[str]:  # a training loop's line, as most output is
        return [f"step={k} loss={rnd.random():.4f} lr=3e-4 | {rnd.random():.2f}it/s" for k in range(300)]

    lines = (
        corpus
        + loop()
        + varied()
        + _by_chance(rnd, 3, zero=True)
        + _by_chance(rnd, 200, zero=False)
        + _distinct(templates.MAX_TEMPLATES + 200)
        + loop()
        + varied()
        + _by_chance(rnd, 3, zero=True)
        + _by_chance(rnd, 200, zero=False)
        + varied()
    )
    parser = LineParser()
    out: list = []
    i = 0
    while i < len(lines):
        step = rnd.choice((1, 3, 64, 500))
        out += parser.parse_many(lines[i : i + step])
        i += step
    _same(out, _line_by_line(lines))  # (the parser with its context: bars, ranks, epochs)
    assert parser._templates.regex_reads > 500  # the fast path did read the loops
    assert len(parser._templates._recipes) < templates.MAX_TEMPLATES  # and the cache did forget


def test_a_template_whose_check_fails_is_dropped_from_the_fast_path_after_a_clear() -> None:
    # A reading that depends on the value (here: n < 100 or not) and a regex learnt before the cache
    # forgot every template. The check that sees the first difference must give the full parser's
    # point for its line, and every later line must be the full parser's too: no regex, stale or
    # new, reads the template again.
    def full(line: str) -> dict | None:
        if not line.startswith("loss="):
            return {"other": 1}
        n = int(line.split("=")[1])
        return {"loss": n} if n < 100 else {"big_loss": n}

    cache = TemplateCache(full)

    def feed(lines: list[str]) -> list:
        out: list = []
        i = 0
        while i < len(lines):
            j = cache.read_run(lines, i, out)
            if j == i:
                out.append(cache.parse(lines[i]))
                j = i + 1
            i = j
        assert out == [full(line) for line in lines]
        return out

    feed([f"loss={n}" for n in range(1, 11)])  # (not 0: a zero at the end is a template apart)
    assert cache.regex_reads == 8  # confirmed by the second line: the regex reads the rest
    for k in range(templates.MAX_TEMPLATES + 1):  # other templates until the cache forgets them all
        cache.parse(f"{''.join(chr(97 + int(d)) for d in str(k))}=1")
    assert not cache._fast and not cache._recent  # forgotten, regexes included
    n = 10
    while cache._uses % templates.CHECK_EVERY != templates.CHECK_EVERY - 1 or n < 20:
        n += 1
        feed([f"loss={n}"])  # small values, until the next use is a check
    feed([f"loss={1000 + k}" for k in range(3 * templates.CHECK_EVERY)])  # the first is checked, and differs


def test_a_flood_of_one_template_is_read_by_its_regex() -> None:
    parser = LineParser()
    lines = [f"step={i} loss={1.0 / i:.6f} lr=3e-4" for i in range(1, 5001)]
    points = parser.parse_many(lines)
    assert points == [parse_line(line) for line in lines]
    assert parser._templates.regex_reads > 4900  # all but the lines that taught the template


def test_a_regex_is_built_only_where_the_split_would_agree() -> None:
    assert template_regex(["step=", " loss=", ""], ["i", "f"], [0], True) is not None
    assert template_regex(["Acc@1 ", " top5 ", ""], ["f", "f"], [], True) is not None  # digits inside names
    assert (
        template_regex(["foo ", " bar ", ""], ["i", "f"], [0], True) is None
    )  # no hint: may_hold_point decides
    assert (
        template_regex(["foo ", " bar ", ""], ["i", "f"], [0], False) is not None
    )  # a pointless line: None anyway
    assert template_regex(["loss ", " - ", ""], ["f", "f"], [], True) is not None  # a dash before a space
    assert template_regex(["loss ", " -", ""], ["f", "f"], [], True) is None  # could become a minus sign
    assert template_regex(["loss \x1b[1m", ""], ["f"], [], True) is None  # clean() would change the line
    assert template_regex(["loss=", "e5x"], ["f"], [], True) is None  # an exponent's greed decides
    assert template_regex(["loss=", ""], [], [], True) is None


def test_the_regex_keeps_the_kinds_apart() -> None:
    rx = template_regex(["loss=", " ", "it/s"], ["f", "f"], [], True)
    assert rx is not None
    assert rx.fullmatch("loss=0.5 3.5it/s") and not rx.fullmatch("loss=0.5 0.0it/s")  # a zero speed: kind "z"
    assert not rx.fullmatch("loss=-0.5 3.5it/s")  # a minus: kind "-f"
    assert not rx.fullmatch("loss=5 3.5it/s")  # an int: kind "i"
    ints = template_regex(["step=", " loss=", ""], ["i", "f"], [0], True)
    assert ints is not None and not ints.fullmatch("step=1,200 loss=0.5")  # int() would refuse "1,200"


def _split_line_by_line(chunks: list[bytes]) -> list[str]:
    """What the splitter returned before #13: each line decoded and cleaned on its own."""
    pending, out = b"", []
    for chunk in chunks:
        parts = re.split(rb"\r\n|\r|\n", pending + chunk)
        pending = parts.pop()
        if len(pending) > 64 * 1024:
            parts.append(pending)
            pending = b""
        out += [strip_ansi(p.decode("utf-8", "replace")) for p in parts if p]
    return out


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"a",
                b"1",
                b" ",
                b"\n",
                b"\r",
                b"\r\n",
                b"\xe2\x82\xac",
                b"\xe2",
                b"\x82",
                b"\xf0\x9f",
                b"\xff",
                b"\x1b[32m",
                b"\x1b]0;t\x07",
                b"\x1b",
                b"\xc3\xa9",
            ]
        ),
        max_size=200,
    ),
    st.integers(min_value=1, max_value=40),
)
def test_the_splitter_decodes_a_chunk_at_once_as_it_decoded_each_line(pieces: list[bytes], size: int) -> None:
    data = b"".join(pieces)
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    splitter = LineSplitter()
    assert [line for chunk in chunks for line in splitter.feed(chunk)] == _split_line_by_line(chunks)


def _supervisor(tmp: Path) -> Supervisor:
    return Supervisor(JobFiles(tmp), {"id": "j", "name": "n", "argv": ["true"], "workdir": str(tmp)})


def test_a_chunk_makes_the_records_its_lines_made_one_by_one(tmp_path: Path) -> None:
    rnd = random.Random(3)
    lines = _flood(rnd, 1500)
    for at in (5, 700, 1200):  # events, a progress bar redrawing the same numbers, a blank
        lines[at:at] = [
            '{"event": "checkpoint_saved", "path": "/ck/1"}',
            "loss=0.5 step=9",
            "loss=0.5 step=9",
            "",
        ]
    one, chunked = _supervisor(tmp_path), _supervisor(tmp_path)
    expected = [e for e in map(one._entry_for, lines) if e is not None]
    got = []
    for i in range(0, len(lines), 150):
        got += chunked._entries_for(lines[i : i + 150])
    assert got == expected and [e[0] for e in got].count("event") == 3
    assert list(chunked.tail) == list(one.tail) and chunked.last_values == one.last_values


def test_a_chunk_follows_a_traceback_and_an_elastic_failure_as_line_by_line(tmp_path: Path) -> None:
    # A worker's exception is the cause even once it scrolled out of the tail; an elastic node
    # judges its own failure on torchrun's line: both must see every line a chunk holds.
    traceback = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "x.py", line 1',
        "[rank1]: RuntimeError: bad GPU",
    ]
    lines = traceback + [f"step={i} loss=0.5" for i in range(100)]
    one, chunked = _supervisor(tmp_path), _supervisor(tmp_path)
    for line in lines:
        one._entry_for(line)
    for i in range(0, len(lines), 40):
        chunked._entries_for(lines[i : i + 40])
    assert chunked.last_exception.last == one.last_exception.last == "RuntimeError: bad GPU"
    failed = "E1201 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 7) of binary: python"
    node = Supervisor(
        JobFiles(tmp_path),
        {
            "id": "j",
            "name": "n",
            "argv": ["true"],
            "workdir": str(tmp_path),
            "multinode": {"nodes": 2, "rank": 1, "elastic": [1, 3]},
        },
    )
    node._entries_for(traceback[:1])
    node._entries_for(traceback[1:] + [failed, "step=1 loss=0.5"])
    assert node.own_failure == (1, "RuntimeError: bad GPU")


def test_number_like_noise_reads_as_line_by_line() -> None:
    # Templates made of the characters the regex's proof is about (signs, dots, commas, exponent
    # letters, "it/s"), their lines repeated with digits and number characters changed.
    rnd = random.Random(17)
    alphabet = "0123456789.,+-eE its/:=@x loss"
    lines = []
    for _ in range(400):
        base = "loss " + "".join(rnd.choice(alphabet) for _ in range(rnd.randint(3, 25)))
        for _ in range(rnd.randint(1, 12)):
            if rnd.random() < 0.9:
                lines.append(
                    re.sub(
                        r"\d", lambda m: rnd.choice("0123456789") if rnd.random() < 0.5 else m.group(), base
                    )
                )
            else:
                lines.append(
                    re.sub(
                        r"[\d.]",
                        lambda m: rnd.choice("0123456789.,-+e") if rnd.random() < 0.1 else m.group(),
                        base,
                    )
                )
    _same(_in_chunks(lines, rnd), _line_by_line(lines))
