"""--env-file's reader (tui/actions/env_file.py): the dotenv syntax people write, values taken as
written, and a bad line refused naming FILE:LINE without showing the line (it may hold a secret)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.actions.env_file import read_env_file
from tui.actions.options import job_env
from tui.errors import EXIT_USAGE, GpudeckError

GOOD = """\
# a comment, then a blank line

PLAIN=value
export EXPORTED=1
  SPACED = a b  # a comment after a space
HASH=a#b
EMPTY=
SINGLE='lit $HOME \\n "q"'  # comment
DOUBLE="tab\\there \\"q\\" back\\\\slash $NOT_EXPANDED"
MULTI="-----BEGIN KEY-----
abc
-----END KEY-----"
PLAIN=later wins
"""


def test_the_dotenv_lines_people_write(tmp_path: Path) -> None:
    f = tmp_path / ".env"
    f.write_text(GOOD)
    assert dict(read_env_file(str(f))) == {
        "PLAIN": "later wins",
        "EXPORTED": "1",
        "SPACED": "a b",
        "HASH": "a#b",
        "EMPTY": "",
        "SINGLE": 'lit $HOME \\n "q"',
        "DOUBLE": 'tab\there "q" back\\slash $NOT_EXPANDED',
        "MULTI": "-----BEGIN KEY-----\nabc\n-----END KEY-----",
    }
    f.write_bytes(b"\xef\xbb\xbfA=1\r\nB='x'\r\n")  # a BOM and CRLF line ends (an editor on Windows)
    assert read_env_file(str(f)) == (("A", "1"), ("B", "x"))


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("A=1\nTOKEN hunter2\n", 2, "expected KEY=value"),
        (
            "A=1\n\n1BAD=hunter2\n",
            3,
            "not a variable name before '=' (letters, digits and _, not starting with a digit)",
        ),
        ("=hunter2\n", 1, "no name before '='"),
        ('A="hunter2\nstill open\n', 1, 'no closing "'),
        ("A='hunter2' trailing\n", 1, "text after the closing quote"),
    ],
)
def test_a_bad_line_is_named_by_file_and_line_never_shown(
    tmp_path: Path, text: str, line: int, why: str
) -> None:
    f = tmp_path / "bad.env"
    f.write_text(text)
    with pytest.raises(GpudeckError) as refused:
        read_env_file(str(f))
    assert str(refused.value) == f"--env-file {f}:{line}: {why}" and refused.value.code == EXIT_USAGE
    assert "hunter2" not in str(refused.value)


def test_unreadable_files_and_env_over_env_file(tmp_path: Path) -> None:
    with pytest.raises(GpudeckError, match=r"--env-file .*missing.env: No such file or directory"):
        read_env_file(str(tmp_path / "missing.env"))
    latin = tmp_path / "latin.env"
    latin.write_bytes(b"A=1\nB=caf\xe9\n")
    with pytest.raises(GpudeckError, match=r"latin.env:2: not UTF-8 text"):
        read_env_file(str(latin))
    first, second = tmp_path / "1.env", tmp_path / "2.env"
    first.write_text("A=1\nB=1\nC=1\n")
    second.write_text("B=2\n")
    assert dict(job_env([str(first), str(second)], ["C=3"])) == {"A": "1", "B": "2", "C": "3"}
