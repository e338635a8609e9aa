"""Issue 35, `gpudeck logs --json`: one JSON object per line of output ({"node", "line", "text", "t"}),
with and without -f, including a last line without its newline and bytes that are not UTF-8;
with -f the exit code is still the job's."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for
from tui.commands.logs_json import JsonLines

PRINTS = r"printf 'step=1 loss=0.5\r\n\nbad \377 byte\nno newline'; exit 3"


def _lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


EXPECTED = [
    {"node": "0", "line": 1, "text": "step=1 loss=0.5", "t": None},
    {"node": "0", "line": 2, "text": "", "t": None},
    {"node": "0", "line": 3, "text": "bad \ufffd byte", "t": None},
    {"node": "0", "line": 4, "text": "no newline", "t": None},
]


@pytest.mark.slow  # a job, and the CLI four times: ~5 s
def test_logs_json_is_one_object_per_line_with_and_without_follow(gpudeck_home: Path, workdir: Path) -> None:
    job = gpudeck("run", "--name", "prints", "--", "bash", "-c", PRINTS, cwd=workdir).stdout.strip()
    wait_for(lambda: "exited" in gpudeck("inspect", job, cwd=workdir).stdout, what="the job's end")
    plain = gpudeck("logs", job, "--json", cwd=workdir)
    assert plain.returncode == 0, plain.stderr
    assert _lines(plain.stdout) == EXPECTED
    followed = gpudeck("logs", "-f", "--json", job, cwd=workdir)
    assert followed.returncode == 3 and _lines(followed.stdout) == EXPECTED  # the job's code, as -f says


def test_lines_split_across_chunks_are_one_object() -> None:
    out = io.BytesIO()
    sink = JsonLines(out, "2")
    for chunk in (b"ab", b"c\nd", b"e\n", b"", b"f"):
        sink.write(chunk)
    assert [json.loads(x)["text"] for x in out.getvalue().splitlines()] == ["abc", "de"]
    sink.close()
    assert _lines(out.getvalue().decode())[-1] == {"node": "2", "line": 3, "text": "f", "t": None}
