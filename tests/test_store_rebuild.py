"""state.db is truly derived (#11, finding 8): missing or corrupt, its job index is rebuilt from the
hosts' journals, said once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import gpudeck


def indexed(home: Path) -> set[str]:
    db = sqlite3.connect(str(home / "state.db"))
    try:
        return {row[0] for row in db.execute("SELECT id FROM jobs")}
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_lost_job_index_is_rebuilt_from_the_journals_and_said_once(
    gpudeck_home: Path, workdir: Path, damage: str
) -> None:
    first = gpudeck("run", "--name", "before", "--", "true", cwd=workdir)
    assert first.returncode == 0, first.stderr
    old_id = first.stdout.strip()
    assert old_id in indexed(gpudeck_home)
    for suffix in ("", "-wal", "-shm"):
        (gpudeck_home / f"state.db{suffix}").unlink(missing_ok=True)
    if damage == "corrupt":
        (gpudeck_home / "state.db").write_bytes(b"this is not a database" * 100)
    again = gpudeck("run", "--name", "after", "--", "true", cwd=workdir)
    assert again.returncode == 0, again.stderr
    new_id = again.stdout.strip()
    assert "job index rebuilt from the hosts' journals (1 jobs)" in again.stderr
    assert indexed(gpudeck_home) == {old_id, new_id}
    third = gpudeck("run", "--", "true", cwd=workdir)
    assert third.returncode == 0 and "rebuilt" not in third.stderr  # said once


@pytest.mark.slow
def test_the_tuis_actions_rebuild_a_missing_index_too(gpudeck_home: Path, workdir: Path) -> None:
    """JobControl (the TUI's actions) opens the store in an action's worker: a fresh one is rebuilt
    there, and the line goes where the TUI's notices go."""
    from tui.services.jobs import JobControl
    from tui.session import Session
    from tui.store import Store

    job_id = gpudeck("run", "--", "true", cwd=workdir).stdout.strip()
    for suffix in ("", "-wal", "-shm"):
        (gpudeck_home / f"state.db{suffix}").unlink(missing_ok=True)
    said: list[str] = []
    session = Session()
    session.notice = said.append  # type: ignore[method-assign]  # the TUI's notifications
    try:
        control = JobControl(None, session, lambda warn: Store(gpudeck_home / "state.db", warn=warn))  # type: ignore[arg-type]
        assert control.store is not None and job_id in indexed(gpudeck_home)
        assert said == [f"{gpudeck_home / 'state.db'}: job index rebuilt from the hosts' journals (1 jobs)"]
        control.close()
    finally:
        session.close()
