"""Two jobs of one tree (and an edit between a third): the host stores each file's bytes once, the
second launch sends nothing, both jobs' work dirs link the same stored files, and the edit sends one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import gpudeck

pytestmark = pytest.mark.slow  # three CLI launches and their ends

READ = "print(open('src/a.py').read())"


def _launch(project: Path) -> tuple[str, str]:
    run = gpudeck("run", "--sync", str(project), "--", "python3", "-c", READ, cwd=project)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip(), run.stderr


def _blobs(agent_dir: Path) -> set[str]:
    return {p.name for p in (agent_dir / "code" / "blobs").rglob("*") if p.is_file()}


def test_two_jobs_of_one_tree_send_the_files_once(
    gpudeck_home: Path, agent_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    for i in range(20):
        (project / "src" / f"m{i}.py").write_text(f"VALUE = {i}\n" * 50)
    (project / "src" / "a.py").write_text("version one")
    first, said = _launch(project)
    assert "sent 21 files" in said
    blobs = _blobs(agent_dir)
    second, said = _launch(project)
    assert "already there" in said and _blobs(agent_dir) == blobs  # nothing sent, nothing stored twice
    (project / "src" / "a.py").write_text("version two")
    third, said = _launch(project)
    assert "sent 1 files" in said and len(_blobs(agent_dir)) == len(blobs) + 1
    for job in (first, second, third):
        assert gpudeck("logs", "-f", job, timeout=60).returncode == 0
    works = [agent_dir / "work" / job / "src" / "m3.py" for job in (first, second, third)]
    inodes = {os.stat(w).st_ino for w in works}
    assert len(inodes) == 1  # one stored copy, linked into every job's work dir
    shown = json.loads(gpudeck("inspect", "--json", second).stdout)
    assert (
        shown["code"]["snapshot"]
        == json.loads(gpudeck("inspect", "--json", first).stdout)["code"]["snapshot"]
    )
