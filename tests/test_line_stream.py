"""LineStream: however a transport cuts the agent's bytes, the same lines and journal bodies come
out, in order (the SSH push path feeds it packet by packet)."""

from __future__ import annotations

import json

from tui.remote.line_stream import LineStream

BODY = b'{"seq":1,"kind":"metric"}\n{"seq":2,"kind":"metric"}\n'
STREAM = (
    (b'chatter\n{"push":"journal","bytes":%d}\n' % len(BODY))
    + BODY
    + b'{"id":1,"ok":true}\n'
    + (b'{"push":"journal","bytes":%d}\n' % len(BODY))
    + BODY
)


def _parse(chunks: list[bytes]) -> tuple[list[tuple[str, bytes]], LineStream]:
    got: list[tuple[str, bytes]] = []

    def on_line(line: bytes) -> int:
        got.append(("line", line))
        try:
            obj = json.loads(line)
        except ValueError:
            return 0
        return obj.get("bytes", 0) if obj.get("push") == "journal" else 0

    stream = LineStream(on_line, lambda body: got.append(("body", body)))
    for chunk in chunks:
        stream.feed(chunk)
    return got, stream


def test_every_cut_of_the_stream_gives_the_same_lines_and_bodies() -> None:
    whole, _ = _parse([STREAM])
    assert [kind for kind, _ in whole] == ["line", "line", "body", "line", "line", "body"]
    assert whole[2][1] == BODY and whole[3][1] == b'{"id":1,"ok":true}\n'
    for cut in range(1, len(STREAM)):
        assert _parse([STREAM[:cut], STREAM[cut:]])[0] == whole, cut
    assert _parse([STREAM[i : i + 1] for i in range(len(STREAM))])[0] == whole  # byte by byte


def test_a_stream_cut_inside_a_line_or_a_body_says_so() -> None:
    header_end = STREAM.index(BODY)
    for cut, inside in (
        (3, True),
        (header_end, True),
        (header_end + 5, True),
        (header_end + len(BODY), False),
    ):
        assert _parse([STREAM[:cut]])[1].inside is inside, cut


def test_a_large_body_in_many_small_chunks_comes_whole() -> None:
    body = b"".join(b'{"seq":%d}\n' % i for i in range(1, 20001))
    data = b'{"push":"journal","bytes":%d}\n' % len(body) + body + b"next\n"
    got, stream = _parse([data[i : i + 1000] for i in range(0, len(data), 1000)])
    assert got == [("line", data[: data.index(b"\n") + 1]), ("body", body), ("line", b"next\n")]
    assert not stream.inside
