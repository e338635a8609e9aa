"""`jobs` keeps ended jobs' answers in one cache file: the same answer as folding every job's files,
updated when a job or node dir goes, never holding a job that is still live."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from remote_agent.serving.jobs import JobTable
from remote_agent.serving.listing import CACHE_NAME
from remote_agent.storage.journal import JournalWriter
from remote_agent.storage.layout import iter_job_dirs


def _job(root: Path, job_id: str, node: str = "0", ended: bool = True) -> Path:
    directory = root / "jobs" / job_id / node
    directory.mkdir(parents=True)
    spec = {"id": job_id, "name": job_id[-4:], "node": node, "argv": ["true"], "workdir": str(root), "env": {},
            "setup": [], "grace": 60.0, "created_at": time.time(), "stop_signal": "SIGTERM"}  # fmt: skip
    (directory / "spec.json").write_text(json.dumps(spec))
    (directory / "lock").touch()
    journal = JournalWriter(directory / "events.jsonl")
    journal.append("state", state="starting", supervisor_pid=None)
    journal.append("metric", values={"step": 1, "loss": float("nan"), "note": "ü"})
    if ended:
        journal.append("state", state="failed", exit_code=3, signal=None, cause="boom", tail=["a", "b"])
    journal.close()
    return directory


def _folded(root: Path) -> list:
    """The answer with no cache: every job's files folded afresh."""
    (root / "jobs" / CACHE_NAME).unlink(missing_ok=True)
    answer = JobTable(root).list()
    (root / "jobs" / CACHE_NAME).unlink(missing_ok=True)
    return answer


def test_the_cached_listing_is_the_folded_one_and_holds_only_ended_jobs(tmp_path: Path) -> None:
    for i in range(3):
        _job(tmp_path, f"20260101-00000{i}-00000{i}")
    _job(tmp_path, "20260101-000005-000005", ended=False)  # starting, no supervisor yet: not ended
    expected = _folded(tmp_path)
    assert JobTable(tmp_path).list() == expected  # builds the cache
    cached = json.loads((tmp_path / "jobs" / CACHE_NAME).read_text())["jobs"]
    assert sorted(cached) == [f"20260101-00000{i}-00000{i}" for i in range(3)]
    assert JobTable(tmp_path).list() == expected  # from the cache
    assert [j["state"] for j in expected] == ["starting", "failed", "failed", "failed"]


def test_a_removed_job_or_node_leaves_the_listing(tmp_path: Path) -> None:
    _job(tmp_path, "20260101-000001-000001")
    _job(tmp_path, "20260101-000002-000002")
    _job(tmp_path, "20260101-000002-000002", node="1")
    assert len(JobTable(tmp_path).list()) == 3
    shutil.rmtree(tmp_path / "jobs" / "20260101-000001-000001")
    shutil.rmtree(tmp_path / "jobs" / "20260101-000002-000002" / "1")
    got = JobTable(tmp_path).list()
    assert [(j["id"], j["node"]) for j in got] == [("20260101-000002-000002", "0")]
    assert got == _folded(tmp_path)


def test_a_broken_cache_is_rebuilt(tmp_path: Path) -> None:
    _job(tmp_path, "20260101-000001-000001")
    expected = _folded(tmp_path)
    (tmp_path / "jobs" / CACHE_NAME).write_text('{"version": 1, "jobs": {"20260101-000001-000001": 7}')
    assert JobTable(tmp_path).list() == expected
    assert JobTable(tmp_path).list() == expected


def test_a_cache_of_another_fold_shape_is_not_used(tmp_path: Path) -> None:
    _job(tmp_path, "20260101-000001-000001")
    expected = _folded(tmp_path)
    JobTable(tmp_path).list()
    path = tmp_path / "jobs" / CACHE_NAME
    cached = json.loads(path.read_text())
    stale = {
        "mtime_ns": cached["jobs"]["20260101-000001-000001"]["mtime_ns"],
        "nodes": [{"id": "20260101-000001-000001"}],
    }
    path.write_text(
        json.dumps(dict(cached, fields=cached["fields"][1:], jobs={"20260101-000001-000001": stale}))
    )
    assert JobTable(tmp_path).list() == expected


def test_only_job_and_node_directories_are_listed(tmp_path: Path) -> None:
    job = "20261201-000000-abcdef"
    for name in ("0", "1", "worker-2"):
        (tmp_path / "jobs" / job / name).mkdir(parents=True)
    (tmp_path / "jobs" / job / "not a node").mkdir()  # no space in a node name
    (tmp_path / "jobs" / job / "notes.txt").write_text("x")
    (tmp_path / "jobs" / "not-a-job-id" / "0").mkdir(parents=True)
    assert sorted((j, n) for j, n, _ in iter_job_dirs(tmp_path)) == [
        (job, "0"),
        (job, "1"),
        (job, "worker-2"),
    ]


def test_a_job_whose_launch_has_not_written_its_spec_is_listed_once_it_has(tmp_path: Path) -> None:
    # A TUI that listed it nameless then saw it fail through its journal before the next listing,
    # and toasted `<id> failed` where `falls-over failed` was due (test_notify_desktop, under load).
    directory = tmp_path / "jobs" / "20261206-120000-abcdef" / "0"
    directory.mkdir(parents=True)  # the launch made the dir; its spec comes next
    table = JobTable(tmp_path)
    assert table.list() == [] and table.list(["20261206-120000-abcdef"]) == []
    shutil.rmtree(directory.parent)
    _job(tmp_path, "20261206-120000-abcdef", ended=False)
    [listed] = JobTable(tmp_path).list()
    assert listed["name"] == "cdef" and listed["state"] != "lost"
