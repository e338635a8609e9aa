"""Watch jobs in the agent: a log file of a run gpudeck did not start, followed through rotation and
truncation, parsed and journaled exactly once; read-only unless a pid was given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from remote_agent.names import new_job_id
from remote_agent.supervision.follow_file import FileFollower
from tests.support.jobs import alive, journal, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

WRITER = str(Path(__file__).parent / "support" / "rotating_writer.py")


def watch_spec(path: Path, pid: int | None = None, **extra: object) -> dict[str, object]:
    job_id = new_job_id()
    return {
        "id": job_id,
        "name": f"w-{job_id[-6:]}",
        "node": "0",
        "argv": [],
        "workdir": str(path.parent),
        "watch": {"path": str(path), "pid": pid},
        **extra,
    }


def output_of(agent_dir: Path, job_id: str) -> Path:
    return agent_dir / "jobs" / job_id / "0" / "output.log"


def steps(agent_dir: Path, job_id: str) -> list[int]:
    return [r["values"]["step"] for r in journal(agent_dir, job_id) if r["kind"] == "metric"]


def test_rotation_and_truncation_journal_every_line_exactly_once(
    client: AgentClient, agent_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "runs" / "train.log"
    log.parent.mkdir()
    # Watched before the file exists: the watch waits for it.
    job = client.request("launch", timeout=30, spec=watch_spec(log))
    assert job["state"] == "running" and job["watch"]["path"] == str(log) and job["argv"] == []
    plan = "lines:40,rotate,lines:30,copytruncate,lines:25,rotate,copytruncate,lines:5"
    writer = subprocess.run(
        [sys.executable, WRITER, str(log), str(output_of(agent_dir, job["id"])), plan],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert writer.returncode == 0, writer.stderr
    wait_for(lambda: len(steps(agent_dir, job["id"])) >= 100, what="100 metric points")
    final = client.request("stop", job=job["id"], node="0", timeout=30)
    assert final["state"] == "stopped" and "read-only" in final["cause"]
    assert steps(agent_dir, job["id"]) == list(range(1, 101))
    text = output_of(agent_dir, job["id"]).read_text()
    assert [line.split()[0] for line in text.splitlines()] == [f"step={i}" for i in range(1, 101)]
    records = journal(agent_dir, job["id"])
    assert ("event", "watch_ended") in [(r["kind"], r.get("event")) for r in records]


def test_a_run_rewritten_in_place_while_the_watcher_slept_is_read_from_its_start(tmp_path: Path) -> None:
    log, copy = tmp_path / "a.log", tmp_path / "copy.log"
    log.write_bytes(b"".join(b"step=%d loss=1\n" % i for i in range(1, 11)))
    out_fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    follower = FileFollower(str(log), out_fd)
    try:
        while follower.step():
            pass
        # copytruncate, and the run wrote more than before before we looked again: same inode, bigger.
        with open(log, "r+b") as f:
            f.truncate(0)
            f.write(b"".join(b"step=%d loss=2\n" % i for i in range(11, 31)))
        while follower.step():
            pass
    finally:
        os.close(out_fd)
    lines = copy.read_text().splitlines()
    assert [line.split()[0] for line in lines] == [f"step={i}" for i in range(1, 31)]
    assert follower.switches == 1


def test_from_end_skips_what_the_file_held(tmp_path: Path) -> None:
    log, copy = tmp_path / "big.log", tmp_path / "copy.log"
    log.write_bytes(b"old line\n" * 1000)
    out_fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    follower = FileFollower(str(log), out_fd, from_end=True)
    try:
        while follower.step():
            pass
        with open(log, "ab") as f:
            f.write(b"step=1 loss=0.5\n")
        while follower.step():
            pass
    finally:
        os.close(out_fd)
    assert copy.read_bytes() == b"step=1 loss=0.5\n"


def test_kill_without_a_pid_is_refused_as_read_only_and_restart_is_never_offered(
    client: AgentClient, tmp_path: Path
) -> None:
    log = tmp_path / "train.log"
    log.write_text("step=1 loss=0.5\n")
    job = client.request("launch", timeout=30, spec=watch_spec(log))
    with pytest.raises(Exception, match="read-only"):
        client.request("kill", job=job["id"], node="0")
    assert wait_state(client, job["id"], {"running"})["state"] == "running"
    client.request("stop", job=job["id"], node="0", timeout=30)
    with pytest.raises(Exception, match="restart is not offered"):
        client.request("restart", job=job["id"], node="0", new_id=new_job_id())


def test_a_bad_watch_spec_names_its_field(client: AgentClient, tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"spec.watch.pid: no live process"):
        client.request("launch", timeout=30, spec=watch_spec(tmp_path / "x.log", pid=2**22 - 7))
    with pytest.raises(Exception, match=r"spec.watch.pid: expected a process id 2..4194304"):
        client.request("launch", timeout=30, spec=watch_spec(tmp_path / "x.log", pid=2**22 + 7))
    with pytest.raises(Exception, match=r"spec.watch.path: a directory"):
        client.request("launch", timeout=30, spec=watch_spec(tmp_path))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(Exception, match=r"spec.watch.path: not a regular file"):
        client.request("launch", timeout=30, spec=watch_spec(fifo))


@pytest.mark.slow  # waits out a grace period
def test_stop_with_a_pid_ends_the_run_and_its_children(
    client: AgentClient, agent_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "train.log"
    # A run that ignores SIGTERM and has a child: the grace runs out, then its whole tree is killed.
    script = f"trap '' TERM; sleep 300 & echo 'step=1 loss=0.25' >> {log}; wait"
    run = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    try:
        wait_for(lambda: log.exists() and log.read_text(), what="the run's first line")
        child = wait_for(
            lambda: [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == run.pid],
            what="the run's child",
        )[0]
        job = client.request("launch", timeout=30, spec=watch_spec(log, pid=run.pid, grace=0.5))
        assert job["pid"] == run.pid
        wait_for(lambda: steps(agent_dir, job["id"]) == [1], what="the first point")
        final = client.request("stop", job=job["id"], node="0", timeout=30)
        assert final["state"] == "stopped"
        run.wait(timeout=10)
        wait_for(lambda: not alive(child), what="the child to be gone")
    finally:
        if run.poll() is None:
            run.kill()


def test_the_watch_ends_exited_when_its_pid_ends(
    client: AgentClient, agent_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "train.log"
    release = tmp_path / "release"
    script = f"echo 'step=1 loss=0.5' >> {log}; while [ ! -e {release} ]; do sleep 0.05; done; echo 'step=2 loss=0.4' >> {log}"
    run = subprocess.Popen(["bash", "-c", script])
    try:
        wait_for(lambda: log.exists() and log.read_text(), what="the run's first line")
        job = client.request("launch", timeout=30, spec=watch_spec(log, pid=run.pid))
        release.touch()
        run.wait(timeout=10)
        final = wait_state(client, job["id"], {"exited", "failed", "stopped", "killed"})
        assert final["state"] == "exited" and final["exit_code"] is None
        assert steps(agent_dir, job["id"]) == [1, 2]  # the last line, written just before the end, is kept
    finally:
        if run.poll() is None:
            run.kill()


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_a_read_error_reopens_the_same_file_where_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, copy = tmp_path / "a.log", tmp_path / "copy.log"
    log.write_bytes(b"step=1 loss=1\n")
    out_fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    follower = FileFollower(str(log), out_fd)
    real_pread = os.pread
    fail = [True]

    def flaky_pread(fd: int, n: int, offset: int) -> bytes:
        if offset > 0 and fail[0]:  # the file's disk hiccups once, after the first line
            fail[0] = False
            raise OSError(5, "Input/output error")
        return real_pread(fd, n, offset)

    try:
        while follower._step_or_reopen():
            pass
        with open(log, "ab") as f:
            f.write(b"step=2 loss=1\n")
        monkeypatch.setattr(os, "pread", flaky_pread)
        for _ in range(5):
            follower._step_or_reopen()
    finally:
        os.close(out_fd)
    assert copy.read_bytes() == b"step=1 loss=1\nstep=2 loss=1\n"


def test_kill_with_a_pid_kills_the_run_at_once(client: AgentClient, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step=1 loss=0.5\n")
    run = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 300 & wait"], start_new_session=True)
    try:
        child = wait_for(
            lambda: [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == run.pid],
            what="the run's child",
        )[0]
        job = client.request("launch", timeout=30, spec=watch_spec(log, pid=run.pid, grace=3600))
        final = client.request("kill", job=job["id"], node="0", timeout=30)
        assert final["state"] == "killed"
        # At once (TERM is ignored and the grace is an hour): SIGKILL ends it, or, when the kill
        # reaches its child first, bash's bare `wait` returns 0 and it exits before its own SIGKILL.
        assert run.wait(timeout=10) in (-9, 0)
        wait_for(lambda: not alive(child), what="the child to be gone")
    finally:
        if run.poll() is None:
            run.kill()


def test_a_reused_pid_is_never_signalled(tmp_path: Path) -> None:
    from remote_agent.supervision.watchspec import process_start, validate_watch_spec, watched_tree

    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        spec = validate_watch_spec(watch_spec(tmp_path / "x.log", pid=sleeper.pid))
        assert spec["watch"]["pid_start"] == process_start(sleeper.pid)
        assert watched_tree(spec) == {sleeper.pid}
        # The same number, another process (its start time differs): not the run we were given.
        reused = dict(spec, watch=dict(spec["watch"], pid_start=spec["watch"]["pid_start"] - 1))
        assert watched_tree(reused) == set()
    finally:
        sleeper.kill()
        sleeper.wait()
