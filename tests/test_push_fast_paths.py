"""The per-line shortcuts on `logs -f`'s path keep the rules of the long way round: the C JSON
scanner decides as json.loads would, and the descriptor writers (the CLI's stdout, serve's stdout)
put every byte of a chunk larger than a pipe holds, in order."""

from __future__ import annotations

import json
import os
import threading

import pytest

from remote_agent.serving.output import LineWriter
from tui.commands.logs import StdoutSink
from tui.remote.client import decode_object

LINES = [
    b'{"push":"output","job":"j","node":"0","offset":3,"data":"eA=="}\n',
    b'{"a":1}',
    b' {"a":1}\n',
    b'{"a":1} trailing',
    b'{"a":1}{"b":2}',
    b"[1, 2]",
    b'"s"',
    b"junk",
    b"",
    b"{",
    b"\xff\xfe{}",
    b'{"a":NaN}',
    b'{"a":1}\r\n',
    '{"é":"ü"}'.encode(),
    b'{"a":"\\u00e9"}',
    b'{"a":1}\n\n',
    b'{"a" :1}',
]


@pytest.mark.parametrize("line", LINES)
def test_decode_object_agrees_with_json_loads(line: bytes) -> None:
    try:
        expected = json.loads(line)
    except ValueError:
        expected = None
    if not isinstance(expected, dict):
        expected = None
    assert decode_object(line) == expected
    assert decode_object(line.decode("utf-8", "replace")) == decode_object(
        line.decode("utf-8", "replace").encode()
    )


def _drain(fd: int, into: bytearray) -> threading.Thread:
    def read() -> None:
        while chunk := os.read(fd, 1 << 16):
            into.extend(chunk)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_the_stdout_sink_writes_a_chunk_larger_than_the_pipe_whole() -> None:
    r, w = os.pipe()
    got = bytearray()
    reader = _drain(r, got)
    chunk = bytes(range(256)) * 4096  # 1 MiB: more than a pipe takes in one write
    with os.fdopen(w, "wb") as out:
        sink = StdoutSink(out)
        sink("j", "0", chunk, None)
        sink("j", "0", b"tail\n", None)
        assert sink.broken is None
    reader.join(10)
    assert bytes(got) == chunk + b"tail\n"


def test_serves_line_writer_writes_a_long_line_whole_and_says_when_the_reader_left() -> None:
    r, w = os.pipe()
    got = bytearray()
    reader = _drain(r, got)
    line = b'{"push":"output","data":"' + b"A" * (1 << 20) + b'"}'
    with os.fdopen(w, "wb") as out:
        writer = LineWriter(out)
        assert writer.send_raw(line) and writer.send({"id": 1, "ok": True})
    reader.join(10)
    assert bytes(got) == line + b'\n{"id":1,"ok":true}\n'

    r, w = os.pipe()
    os.close(r)
    with os.fdopen(w, "wb") as out:
        writer = LineWriter(out)
        assert writer.send_raw(b"{}") is False and writer.closed  # EPIPE: the client went away
