"""Nothing lost, nothing stuck (#11): a read-only GPUDECK_HOME, a corrupt or locked state.db, and an
idle stop on a host without GPUs, each through the real CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import gpudeck

QUICK = [sys.executable, "-c", "print('hello from the job')"]


def _wait_ended(job_id: str, cwd: Path) -> None:
    # `logs -f` returns once the job has ended: a condition, not a sleep
    assert gpudeck("logs", "-f", job_id, cwd=cwd).returncode == 0


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """The directory read-only for everyone, root included: a read-only bind mount when root."""
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(path)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(path)], check=True)
        return
    bind = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True, text=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount {path} read-only: {bind.stderr.strip()}")
    try:
        ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True, text=True)
        if ro.returncode != 0:
            pytest.skip(f"cannot remount {path} read-only: {ro.stderr.strip()}")
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


@pytest.mark.slow
def test_a_read_only_home_still_shows_everything_and_refuses_acting_in_one_line(
    gpudeck_home: Path, workdir: Path
) -> None:
    launched = gpudeck("run", "--name", "ro", "--", *QUICK, cwd=workdir)
    assert launched.returncode == 0, launched.stderr
    job_id = launched.stdout.strip()
    _wait_ended(job_id, workdir)
    with read_only(gpudeck_home):
        ps = gpudeck("ps", "--all", "--json", cwd=workdir)
        assert ps.returncode == 0, ps.stderr
        assert [j["id"] for j in json.loads(ps.stdout)] == [job_id]
        logs = gpudeck("logs", "ro", cwd=workdir)
        assert logs.returncode == 0 and "hello from the job" in logs.stdout, logs.stderr
        inspect = gpudeck("inspect", "--json", job_id, cwd=workdir)
        assert inspect.returncode == 0 and job_id in inspect.stdout, inspect.stderr
        cost = gpudeck("cost", "--json", cwd=workdir)
        assert cost.returncode == 0, cost.stderr
        for verb in (["run", "--", "true"], ["rm", job_id]):
            refused = gpudeck(*verb, cwd=workdir)
            assert refused.returncode != 0, verb
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
            assert str(gpudeck_home) in refused.stderr and "internal error" not in refused.stderr
    assert gpudeck("ps", "--all", "--json", cwd=workdir).stdout.count(job_id) == 1  # nothing lost


def _corrupt(db: Path) -> None:
    with db.open("r+b") as f:
        f.write(os.urandom(4096))


@pytest.mark.slow
def test_a_corrupt_state_db_is_moved_aside_and_rebuilt(gpudeck_home: Path, workdir: Path) -> None:
    first = gpudeck("run", "--", *QUICK, cwd=workdir)
    assert first.returncode == 0, first.stderr
    db = gpudeck_home / "state.db"
    _corrupt(db)
    launched = gpudeck("run", "--name", "after", "--", *QUICK, cwd=workdir)
    assert launched.returncode == 0, launched.stderr
    said = launched.stderr.strip().splitlines()
    assert len(said) == 1 and "state.db.corrupt-" in said[0] and "rebuilt" in said[0], launched.stderr
    assert len(list(gpudeck_home.glob("state.db.corrupt-*"))) >= 1
    job_id = launched.stdout.strip()
    _wait_ended(job_id, workdir)

    _corrupt(db)
    removed = gpudeck("rm", job_id, cwd=workdir)
    assert removed.returncode == 0, removed.stderr
    assert job_id not in gpudeck("ps", "--all", cwd=workdir).stdout

    _corrupt(db)
    cost = gpudeck("cost", cwd=workdir)
    assert cost.returncode == 0, cost.stderr
    assert len(cost.stderr.strip().splitlines()) == 1 and "rebuilt" in cost.stderr, cost.stderr


@contextmanager
def locked(db: Path) -> Iterator[None]:
    """Another process holding an exclusive transaction on state.db until the block ends."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "db.execute('BEGIN EXCLUSIVE')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


@pytest.mark.slow
def test_a_locked_state_db_never_turns_a_done_action_into_a_failure(
    gpudeck_home: Path, workdir: Path
) -> None:
    assert gpudeck("run", "--", *QUICK, cwd=workdir).returncode == 0  # state.db exists, in WAL mode
    db = gpudeck_home / "state.db"
    with locked(db):
        launched = gpudeck("run", "--name", "locked", "--", *QUICK, cwd=workdir)
        assert launched.returncode == 0, launched.stderr
        job_id = launched.stdout.strip()
        assert len(job_id) == 22
        warning = launched.stderr.strip().splitlines()
        assert len(warning) == 1 and "state.db" in warning[0], launched.stderr
        _wait_ended(job_id, workdir)
        removed = gpudeck("rm", job_id, cwd=workdir)
        assert removed.returncode == 0, removed.stderr
        assert len(removed.stderr.strip().splitlines()) <= 1
    assert job_id not in gpudeck("ps", "--all", cwd=workdir).stdout
    assert sqlite3.connect(str(db)).execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_an_idle_stop_on_a_host_without_gpus_is_refused(gpudeck_home: Path, workdir: Path) -> None:
    env = {"PYNVML_FAKE": ""}
    result = gpudeck("run", "--idle-stop", "30m@10%", "--", "true", cwd=workdir, env=env)
    assert result.returncode == 2
    assert (
        result.stderr.count("\n") == 1 and "--idle-stop" in result.stderr and "no NVIDIA GPU" in result.stderr
    )
    assert gpudeck("ps", "--all", "--json", cwd=workdir).stdout.strip() == "[]"  # nothing launched


@pytest.mark.slow
def test_a_hosts_default_idle_stop_is_skipped_with_a_note_without_gpus(
    gpudeck_home: Path, workdir: Path
) -> None:
    assert gpudeck("hosts", "set", "local", "idle_stop=30m@10%", cwd=workdir).returncode == 0
    result = gpudeck("run", "--", "true", cwd=workdir)
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    note = result.stderr.strip().splitlines()
    assert len(note) == 1 and "no NVIDIA GPU" in note[0] and "idle_stop" in note[0], result.stderr
    spec = json.loads((gpudeck_home / "local-agent" / "jobs" / job_id / "0" / "spec.json").read_text())
    assert "idle_stop" not in spec
    assert gpudeck("run", "--idle-stop", "off", "--", "true", cwd=workdir).stderr == ""  # off: nothing to say
