"""The agent's `lines` index and `search` over output.log agree with a plain split of the file,
at every chunk edge (tiny chunks), across the output cap's hole, and over the protocol."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from remote_agent.serving import logindex
from remote_agent.serving.logindex import LogArgError, index_lines, search
from tests.support.jobs import launch
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError


def starts_of(data: bytes) -> list[int]:
    """Every line start: 0 and each byte after a newline (the end too, where the next line would go)."""
    return [0] + [i + 1 for i, b in enumerate(data) if b == 10]


def random_log(rng: random.Random, lines: int) -> bytes:
    words = ["step", "loss", "needle", "Naïve", "", "x" * 300, "epoch 3/10", "\r50%\r100%"]
    return b"".join(
        (" ".join(rng.choice(words) for _ in range(rng.randint(0, 6))) + "\n").encode() for _ in range(lines)
    )


@pytest.fixture(params=[7, 64, 4096])
def small_chunks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(logindex, "CHUNK", request.param)
    return request.param


def full_index(path: Path, step: int, max_bytes: int | None = None, gap: list[int] | None = None) -> dict:
    """Every answer of a client going on from `end` while `more`, joined."""
    offset = line = 0
    marks: list[list[int]] = []
    while True:
        r = index_lines(str(path), offset, line, step, max_bytes, gap)
        marks += r["marks"]
        offset, line = r["end"], r["lines"]
        if not r["more"]:
            return {"marks": marks, "end": offset, "lines": line, "size": r["size"]}


def test_marks_are_line_starts_with_their_numbers(tmp_path: Path, small_chunks: int) -> None:
    data = random_log(random.Random(small_chunks), 400) + b"a partial last line"
    path = tmp_path / "output.log"
    path.write_bytes(data)
    starts = starts_of(data[: data.rfind(b"\n") + 1])
    step = 4096
    got = full_index(path, step, max_bytes=5000)  # many answers: `more` and `end` carry on
    assert (
        got["lines"] == data.count(b"\n") and got["end"] == data.rfind(b"\n") + 1 and got["size"] == len(data)
    )
    want = []
    block = step
    for number, start in enumerate(starts):
        if start >= block:
            want.append([number, start])
            block = (start // step + 1) * step
    assert got["marks"] == want


def test_the_hole_of_the_output_cap_belongs_to_no_line(tmp_path: Path) -> None:
    kept_head, kept_tail = b"one\ntwo\nthr", b"ee\nfour\n"
    path = tmp_path / "output.log"
    path.write_bytes(kept_head + b"\0" * 50_000 + kept_tail)  # a punched hole reads as zeros
    gap = [len(kept_head), len(kept_head) + 50_000]
    got = full_index(path, 4096, gap=gap)
    assert got["lines"] == 4  # "thr" + "ee" is one line, as a reader of `logs` (which skips the hole) sees it
    assert got["marks"] == [[3, gap[1] + 3]]  # the first line start after the hole, numbered as such
    hit = search(str(path), "four", 0, 0, False, None, gap)["found"]
    assert hit == {"line": 3, "offset": gap[1] + 3, "next": gap[1] + 8}


def brute_search(data: bytes, text: str, from_line: int, backward: bool) -> int | None:
    rows = data.split(b"\n")
    needle = text.encode().lower()
    order = range(from_line - 1, -1, -1) if backward else range(from_line, len(rows))
    return next((i for i in order if needle in rows[i].lower()), None)


def test_search_finds_the_same_lines_as_a_plain_scan(tmp_path: Path, small_chunks: int) -> None:
    rng = random.Random(small_chunks + 1)
    data = random_log(rng, 300)
    path = tmp_path / "output.log"
    path.write_bytes(data)
    starts = starts_of(data)
    for _ in range(40):
        text = rng.choice(["needle", "NEEDLE", "epoch 3", "naïve", "step loss", "100%", "absent text"])
        line = rng.randrange(len(starts))
        backward = rng.random() < 0.5
        want = brute_search(data, text, line, backward)
        r = search(str(path), text, starts[line], line, backward, 1 << 30, None)
        if want is None:
            assert r["found"] is None and not r["more"], (text, line, backward)
            continue
        assert r["found"] == {"line": want, "offset": starts[want], "next": starts[want + 1]}, (
            text,
            line,
            backward,
        )


def test_a_bounded_search_says_where_to_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logindex, "CHUNK", 100)
    data = b"".join(b"line %d\n" % i for i in range(1000)) + b"the needle\n"
    path = tmp_path / "output.log"
    path.write_bytes(data)
    offset, line, rounds = 0, 0, 0
    while True:
        rounds += 1
        r = search(str(path), "needle", offset, line, False, 1000, None)
        if not r["more"]:
            break
        offset, line = r["offset"], r["line"]
    assert rounds > 5 and r["found"] == {"line": 1000, "offset": data.index(b"the needle"), "next": len(data)}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"text": ""}, "text"),
        ({"text": "x" * 300}, "text"),
        ({"text": "a", "backward": "yes"}, "backward"),
        ({"text": "a", "offset": -1}, "offset"),
        ({"text": "a", "line": True}, "line"),
    ],
)
def test_bad_search_arguments_are_named(tmp_path: Path, args: dict, field: str) -> None:
    full = {"text": "a", "offset": 0, "line": 0, "backward": False, "max_bytes": None, "gap": None, **args}
    with pytest.raises(LogArgError, match=f"^{field}: "):
        search(str(tmp_path / "none"), **full)


def test_lines_and_search_over_the_protocol(client: AgentClient, workdir: Path) -> None:
    argv = ["bash", "-c", "for i in $(seq 1 500); do echo \"row $i\"; done; echo 'the Needle'"]
    job = launch(client, workdir, argv)
    wait_for(lambda: client.request("lines", job=job["id"], node="0")["done"], what="the job's end")
    got = client.request("lines", job=job["id"], node="0", step=4096)
    assert got["lines"] == 501 and got["end"] == got["size"] and not got["more"]
    assert all(m[1] >= 4096 for m in got["marks"][:1])
    hit = client.request("search", job=job["id"], node="0", text="needle", offset=0, line=0)
    assert hit["found"]["line"] == 500
    back = client.request(
        "search",
        job=job["id"],
        node="0",
        text="row 2",
        offset=hit["found"]["offset"],
        line=500,
        backward=True,
    )
    assert (
        back["found"]["line"] == 298
    )  # "row 299" (lines count from 0) is the last before it holding "row 2"
    with pytest.raises(AgentError, match="step: expected an integer >= 4096"):
        client.request("lines", job=job["id"], node="0", step=10)


def test_the_cache_answers_as_a_fresh_scan_and_reads_only_new_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "output.log"
    path.write_bytes(random_log(random.Random(5), 3000))
    cache = logindex.IndexCache()
    read: list[int] = []
    plain_read = logindex._read

    def counting(f, start: int, stop: int) -> bytes:  # type: ignore[no-untyped-def]
        read.append(stop - start)
        return plain_read(f, start, stop)

    monkeypatch.setattr(logindex, "_read", counting)
    first = cache.lines(str(path), 0, 0, 4096, None, None)
    assert first == index_lines(str(path), 0, 0, 4096, None, None) and first["marks"]
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(random_log(random.Random(6), 500) + b"partial")
    read.clear()
    again = cache.lines(str(path), 0, 0, 4096, None, None)  # a reopened full log
    assert sum(read) == path.stat().st_size - first["end"] < size  # only the bytes after the last scan
    fresh = index_lines(str(path), 0, 0, 4096, None, None)
    assert again == fresh
    mark = fresh["marks"][3]  # going on from a mark it knows
    assert cache.lines(str(path), mark[1], mark[0], 4096, None, None) == index_lines(
        str(path), mark[1], mark[0], 4096, None, None
    )
    assert cache.lines(str(path), 0, 0, 4096, None, [10, 20]) == index_lines(
        str(path), 0, 0, 4096, None, [10, 20]
    )


def test_a_cached_index_longer_than_one_answer_goes_on_in_several(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logindex, "MAX_MARKS", 5)
    path = tmp_path / "output.log"
    path.write_bytes(random_log(random.Random(7), 2000))
    cache = logindex.IndexCache()
    fresh = index_lines(str(path), 0, 0, 4096, None, None)
    cache.lines(str(path), 0, 0, 4096, None, None)
    marks, offset, line = [], 0, 0
    while True:
        r = cache.lines(str(path), offset, line, 4096, None, None)
        assert len(r["marks"]) <= 5 or not r["more"]
        marks += r["marks"]
        offset, line = r["end"], r["lines"]
        if not r["more"]:
            break
    assert marks == fresh["marks"] and (offset, line) == (fresh["end"], fresh["lines"])
