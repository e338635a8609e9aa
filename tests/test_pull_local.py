"""`gpudeck pull` from the local host's real agent: a job's directory comes back as it is (bytes,
exec bits, links as links, names that are not UTF-8, times), a second pull sends nothing, an edited
file goes again, and no path or link leads a pull out of the job's working directory."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for
from tui.actions import find, launch
from tui.actions.options import LaunchOptions
from tui.actions.pull import pull
from tui.errors import EXIT_NO_SUCH_JOB, EXIT_USAGE, GpudeckError
from tui.session import Session

pytestmark = pytest.mark.slow  # real jobs and CLI processes pulling their trees

MAKE_TREE = r"""
import os

os.makedirs("ckpt/sub/empty")
with open("ckpt/model.bin", "wb") as f:
    f.write(os.urandom(300000))  # does not compress
with open("ckpt/log.txt", "w") as f:
    f.write("step loss\n" * 20000)  # does
with open("ckpt/run.sh", "w") as f:
    f.write("#!/bin/sh\necho hi\n")
os.chmod("ckpt/run.sh", 0o755)
with open(b"ckpt/sub/caf\xe9-\xff.txt", "wb") as f:  # latin-1 bytes: not a UTF-8 name
    f.write(b"latin")
os.symlink("log.txt", "ckpt/latest")
os.symlink("/etc/passwd", "ckpt/passwd")  # sent as a link, never as /etc/passwd's bytes
os.symlink("/", "ckpt/root")
"""


@pytest.fixture
def session(gpudeck_home: Path):
    s = Session()
    yield s
    s.close()


def ended_job(session: Session, workdir: Path, code: str = MAKE_TREE, name: str = "maker") -> str:
    launched = launch.launch(
        session,
        session.store,
        LaunchOptions(argv=(sys.executable, "-c", code), workdir=str(workdir), name=name),
    )
    wait_for(lambda: find.resolve(session, launched.id).state == "exited", timeout=30, what="the job to exit")
    return launched.id


def tree(root: Path) -> dict[bytes, tuple[object, ...]]:
    """Every entry below root by its name's bytes: (kind, bytes or link target, mode, mtime_ns)."""
    out: dict[bytes, tuple[object, ...]] = {}
    base = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, base)
            if os.path.islink(path):
                out[rel] = ("l", os.readlink(path))
            elif os.path.isdir(path):
                out[rel] = ("d",)
            else:
                out[rel] = ("f", Path(os.fsdecode(path)).read_bytes(), st.st_mode & 0o777, st.st_mtime_ns)
    return out


def test_a_pull_after_the_job_ended_copies_the_tree_as_it_is(
    session: Session, workdir: Path, tmp_path: Path
) -> None:
    job = ended_job(session, workdir)
    dest = tmp_path / "dest"
    pulled = pull(session, job, "ckpt", str(dest))
    assert tree(dest / "ckpt") == tree(workdir / "ckpt")  # bytes, exec bit, links, odd names, times
    assert (dest / "ckpt" / "run.sh").stat().st_mode & 0o111  # the exec bit came along
    assert os.readlink(dest / "ckpt" / "passwd") == "/etc/passwd" and (dest / "ckpt" / "root").is_symlink()
    assert (dest / "ckpt" / "sub" / "empty").is_dir()
    copied = {c["path"] for c in pulled.to_json()["copied"]}
    assert "ckpt/model.bin" in copied and len(copied) == 4
    assert not list(dest.rglob(".gpudeck-pull.*"))  # no temp file left behind
    # one file: it lands in DEST under its own name, as the job has it
    pull(session, job, "ckpt/run.sh", str(dest / "one"))
    assert (dest / "one" / "run.sh").read_bytes() == (workdir / "ckpt" / "run.sh").read_bytes()


def test_a_second_pull_sends_nothing_and_an_edited_file_goes_again(
    session: Session, workdir: Path, tmp_path: Path
) -> None:
    job = ended_job(session, workdir)
    dest = tmp_path / "dest"
    first = pull(session, job, "ckpt", str(dest))
    second = pull(session, job, "ckpt", str(dest))
    assert second.got.copied == [] and second.got.links == [] and second.got.dirs == []
    assert second.unchanged == 4 and second.got.bytes == 0
    assert second.wire_bytes < 400 < first.wire_bytes  # a header and an end line: no file's bytes
    log = workdir / "ckpt" / "log.txt"
    before = log.stat()
    log.write_text("STEP LOSS\n" * 20000)  # same size: only the time tells
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    (workdir / "ckpt" / "run.sh").write_text("#!/bin/sh\necho bye\n")  # same time, another size
    os.utime(
        workdir / "ckpt" / "run.sh", ns=(before.st_atime_ns, (dest / "ckpt" / "run.sh").stat().st_mtime_ns)
    )
    third = pull(session, job, "ckpt", str(dest))
    assert sorted(c["path"] for c in third.to_json()["copied"]) == ["ckpt/log.txt", "ckpt/run.sh"]
    assert tree(dest / "ckpt") == tree(workdir / "ckpt")


def test_a_pulled_link_never_carries_a_later_write_out_of_the_copy(
    session: Session, workdir: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    job = ended_job(
        session, workdir, f"import os; os.makedirs('out'); os.symlink({str(victim)!r}, 'out/sub')"
    )
    dest = tmp_path / "dest"
    pull(session, job, "out", str(dest))
    assert (dest / "out" / "sub").is_symlink()
    (workdir / "out" / "sub").unlink()  # the job now has a directory there
    (workdir / "out" / "sub").mkdir()
    (workdir / "out" / "sub" / "x").write_text("x")
    pull(session, job, "out", str(dest))
    assert list(victim.iterdir()) == []  # not written through the old link
    assert not (dest / "out" / "sub").is_symlink() and (dest / "out" / "sub" / "x").read_text() == "x"


def test_paths_out_of_the_work_dir_are_refused(session: Session, workdir: Path, tmp_path: Path) -> None:
    job = ended_job(session, workdir)
    (tmp_path / "secret").write_text("no")
    for path, words in (
        (str(tmp_path / "secret"), "outside the job's working directory"),
        ("ckpt/root/etc/passwd", "a symlink; pull follows none"),
        ("nothing-here", "No such file or directory"),
    ):
        with pytest.raises(GpudeckError, match=words):
            pull(session, job, path, str(tmp_path / "dest"))
    pulled = pull(session, job, str(workdir / "ckpt" / "log.txt"), str(tmp_path / "dest"))  # inside: fine
    assert [c["path"] for c in pulled.to_json()["copied"]] == ["log.txt"]
    assert not (tmp_path / "dest" / "secret").exists()
    with pytest.raises(GpudeckError, match="has no node '7'") as no_node:
        pull(session, job, "ckpt", str(tmp_path / "dest"), node="7")
    assert no_node.value.code == EXIT_NO_SUCH_JOB


def test_the_cli_refuses_an_escape_and_an_unknown_job_in_one_line(gpudeck_home: Path, tmp_path: Path) -> None:
    escape = gpudeck("pull", "some-job", "ckpt/../../etc", cwd=tmp_path)
    assert escape.returncode == EXIT_USAGE
    assert escape.stderr == "gpudeck: pull ckpt/../../etc: '..' leaves the job's working directory\n"
    unknown = gpudeck("pull", "no-such-job", "ckpt", "--json", cwd=tmp_path)
    assert unknown.returncode == EXIT_NO_SUCH_JOB and unknown.stdout == ""
    assert unknown.stderr == "gpudeck: no job 'no-such-job' (see `gpudeck ps --all`)\n"
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "etc").exists()


def test_the_cli_answers_json_with_what_was_copied(gpudeck_home: Path, workdir: Path, tmp_path: Path) -> None:
    job = gpudeck("run", "--", sys.executable, "-c", MAKE_TREE, cwd=workdir).stdout.strip()
    assert gpudeck("logs", "-f", job).returncode == 0  # it ended
    out = gpudeck("pull", "--json", job, "ckpt/sub", str(tmp_path / "d"))
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["copied"] == [{"path": "sub/caf\udce9-\udcff.txt", "size": 5}]
    assert answer["type"] == "directory" and answer["node"] == "0" and answer["host"] == "local"
    assert (tmp_path / "d" / "sub" / os.fsdecode(b"caf\xe9-\xff.txt")).read_bytes() == b"latin"
    assert out.stderr == ""  # no progress meter with --json, however long it took
    again = gpudeck("pull", job, "ckpt/sub", str(tmp_path / "d"))
    # A pull over a second (a loaded machine) says so on stderr; nothing else may be there.
    assert again.stdout.endswith(": up to date (1 files)\n")
    assert all(line.startswith("pull: ") for line in again.stderr.splitlines()), again.stderr
