"""The job-level decision a resize, a restart, a stop and a removal meet at (remote_agent/serving/
transition.py), act by act: what two clients racing on one job each get."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from remote_agent.names import new_job_id
from remote_agent.serving import transition as tr


@pytest.fixture
def job(tmp_path: Path) -> str:
    job_id = new_job_id()
    (tmp_path / "jobs" / job_id / "0").mkdir(parents=True)
    return job_id


def test_one_resize_at_a_time_then_the_commit_names_the_new_job(tmp_path: Path, job: str) -> None:
    a, b = new_job_id(), new_job_id()
    assert tr.transition(tmp_path, job, "begin", "resize", a)["phase"] == "begun"
    assert tr.transition(tmp_path, job, "begin", "resize", a)["token"] == a  # the same client again
    with pytest.raises(tr.TransitionError, match="a resize is under way"):
        tr.transition(tmp_path, job, "begin", "restart", b)
    with pytest.raises(tr.TransitionError, match="under way"):
        tr.transition(tmp_path, job, "remove")
    tr.transition(tmp_path, job, "check", token=a)
    assert tr.transition(tmp_path, job, "commit", token=a)["phase"] == "committed"
    with pytest.raises(tr.TransitionError, match=f"already restarted as {a}"):
        tr.transition(tmp_path, job, "begin", "resize", b)
    assert tr.transition(tmp_path, job, "remove")["phase"] == "removing"
    with pytest.raises(tr.TransitionError, match="being removed"):
        tr.transition(tmp_path, job, "begin", "restart", b)


def test_a_stop_wins_over_a_resize_under_way(tmp_path: Path, job: str) -> None:
    a = new_job_id()
    tr.transition(tmp_path, job, "begin", "resize", a)
    assert tr.transition(tmp_path, job, "stop")["phase"] == "stopped"
    with pytest.raises(tr.TransitionError, match="stopped during the resize: not relaunched"):
        tr.transition(tmp_path, job, "commit", token=a)
    assert tr.transition(tmp_path, job, "abort", token=a) == {}
    assert tr.transition(tmp_path, job, "begin", "restart", new_job_id())["phase"] == "begun"  # free again


def test_a_claim_whose_client_died_goes_stale(tmp_path: Path, job: str) -> None:
    path = tmp_path / "jobs" / job / tr.FILE_NAME
    tr.transition(tmp_path, job, "begin", "resize", new_job_id())
    body = json.loads(path.read_text())
    path.write_text(json.dumps(dict(body, t=time.time() - tr.STALE_AFTER - 1)))
    assert tr.transition(tmp_path, job, "begin", "resize", new_job_id())["phase"] == "begun"


def test_the_file_goes_with_the_last_node(tmp_path: Path, job: str) -> None:
    tr.transition(tmp_path, job, "begin", "restart", new_job_id())
    directory = tmp_path / "jobs" / job
    tr.forget_job_dir(directory)  # node 0 is still there
    assert (directory / tr.FILE_NAME).exists()
    (directory / "0").rmdir()
    tr.forget_job_dir(directory)
    assert not directory.exists()
