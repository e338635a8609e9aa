"""The agent's CPU per followed line (issue 13, `logs -f` latency): each syscall and fold inside a
line's burst delays its push, so the hub reads each ready fd once, output.log with one pread a
round, a refresh reads the journal once when that read reached its end, and idle hubs do not
poll at all."""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import select
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remote_agent.jobstate import JobView
from remote_agent.serving import outputhub, tailhub
from remote_agent.serving.output import LineWriter
from remote_agent.serving.outputhub import OutputHub, _Follow, wait_seconds
from remote_agent.serving.tailhub import TailHub
from remote_agent.storage.journal import JournalWriter
from remote_agent.storage.watch import Watcher
from tests.support.waiting import wait_for

JOB = "20261201-000000-cpu000"


class _Job:
    """A job directory whose 'supervisor' is this test: it holds the lock and writes the journal."""

    def __init__(self, directory: Path, spec: dict[str, Any] | None = None) -> None:
        self.dir = directory
        (directory / "spec.json").write_text(json.dumps(spec or {"argv": ["x"]}))
        (directory / "output.log").write_bytes(b"")
        self._lock_fd = os.open(str(directory / "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)  # supervisor_alive: the job is not lost
        self.journal = JournalWriter(directory / "events.jsonl")
        self.journal.append("state", state="starting", supervisor_pid=os.getpid())
        self.journal.append("state", state="running", pid=os.getpid())

    def print(self, data: bytes) -> None:
        with open(self.dir / "output.log", "ab") as f:
            f.write(data)

    def close(self) -> None:
        self.journal.close()
        os.close(self._lock_fd)


@pytest.fixture
def job(tmp_path: Path) -> Iterator[_Job]:
    made = _Job(tmp_path)
    yield made
    made.close()


def _pushes(out: io.BytesIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


# -- Watcher.wait --------------------------------------------------------------------------------


def test_a_wait_reads_each_ready_fd_once_and_leaves_nothing_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "grows"
    target.write_bytes(b"")
    watcher = Watcher()
    try:
        assert watcher.add(str(target)), "this machine has inotify (FACTS.md)"
        for _ in range(5):  # several queued events and wake bytes: one read gets each fd's all
            with open(target, "ab") as f:
                f.write(b"line\n")
            watcher.wake()
        ours = {watcher._fd, watcher._wake_r}
        reads: list[tuple[int, str]] = []
        real_read = os.read

        def read(fd: int, n: int) -> bytes:
            if fd not in ours:
                return real_read(fd, n)
            try:
                data = real_read(fd, n)
            except BlockingIOError:
                reads.append((fd, "EAGAIN"))
                raise
            reads.append((fd, "data" if data else "empty"))
            return data

        monkeypatch.setattr(os, "read", read)
        watcher.wait(5)
        monkeypatch.undo()
        assert sorted(reads) == sorted((fd, "data") for fd in ours)  # no read that only fails EAGAIN
        ready, _, _ = select.select(list(ours), [], [], 0)
        assert ready == []  # drained: the next wait sleeps until something new happens
    finally:
        watcher.close()


# -- JobView.refresh --------------------------------------------------------------------------------


def test_a_refresh_that_read_to_the_end_opens_the_journal_once(
    job: _Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = JobView(JOB, "0", job.dir)
    view.refresh()
    job.journal.append("metric", values={"loss": 0.5})
    journal = str(job.dir / "events.jsonl")
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    state = view.refresh()
    monkeypatch.undo()
    assert opened.count(journal) == 1
    assert state["last"] == {"loss": 0.5} and state["last_seq"] == 3 and state["state"] == "running"


def test_a_journal_larger_than_one_read_is_still_folded_whole_in_one_refresh(job: _Job) -> None:
    pad = "p" * 200
    for step in range(6000):  # ~1.5 MB: more than read_new's 1 MiB a read
        job.journal.append("metric", values={"step": step, "pad": pad})
    job.journal.append("state", state="exited", exit_code=0)
    assert (job.dir / "events.jsonl").stat().st_size > 1 << 20
    state = JobView(JOB, "0", job.dir).refresh()
    assert state["state"] == "exited" and state["last_seq"] == 6003 and state["last"]["step"] == 5999


# -- OutputHub ---------------------------------------------------------------------------------------


def test_a_round_reads_output_log_with_one_syscall(job: _Job, monkeypatch: pytest.MonkeyPatch) -> None:
    job.print(b"hello\n")
    out = io.BytesIO()
    hub = OutputHub(LineWriter(out))
    sub = _Follow(JobView(JOB, "0", job.dir), 0)
    hub._subs[(JOB, "0")] = sub
    hub._over(sub)  # the first look folds at once; what follows counts one line's round
    reads: list[str] = []
    real_pread, real_read = os.pread, os.read
    monkeypatch.setattr(os, "pread", lambda fd, n, at: reads.append("pread") or real_pread(fd, n, at))
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append("read") or real_read(fd, n))
    try:
        assert hub._pump((JOB, "0"), sub) is False  # the line, pushed; a short read: wait now
        assert reads == ["pread"]
        job.print(b"x" * (outputhub.CHUNK_BYTES + 1))
        assert hub._pump((JOB, "0"), sub) is True  # a whole chunk: there may be more, look again
        assert hub._pump((JOB, "0"), sub) is False
        assert reads == ["pread", "pread", "pread"]
        assert hub._pump((JOB, "0"), sub) is False  # nothing new; the job goes on
        assert reads == ["pread"] * 4
    finally:
        monkeypatch.undo()
        sub.close()
        hub.close()
    push, *_ = _pushes(out)
    assert base64.b64decode(push["data"]) == b"hello\n" and push["offset"] == 0


def test_a_journal_that_gained_only_points_is_not_folded_inside_a_lines_push(
    job: _Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: a trainer's line adds a metric record just after its bytes; the follow waits on the
    job's end (and the cap's hole), which no metric, points, heartbeat or gpu record can bring."""
    hub = OutputHub(LineWriter(io.BytesIO()))
    sub = _Follow(JobView(JOB, "0", job.dir), 0)
    folds: list[int] = []
    real_refresh = JobView.refresh

    def refresh(view: JobView) -> dict[str, Any]:
        folds.append(1)
        return real_refresh(view)

    monkeypatch.setattr(JobView, "refresh", refresh)
    try:
        assert hub._over(sub) is False and len(folds) == 1  # the first look folds
        job.journal.append("metric", values={"loss": 0.5})
        job.journal.append_many(
            [("metric", {"values": {"loss": 0.1 * k}}) for k in range(3)]
        )  # a points line
        job.journal.append("heartbeat", output_offset=6)
        job.journal.append("gpu", gpus=[{"index": 0, "util": 50, "kind": "event"}])
        with open(job.dir / "events.jsonl", "ab") as f:
            f.write(b'{"seq":99,"t":1.0,"kind":"sta')  # a record still being written
        assert hub._over(sub) is False and len(folds) == 1
        with open(job.dir / "events.jsonl", "ab") as f:
            f.write(b'te","state":"exited","exit_code":0}\n')  # the end: folded at once
        assert hub._over(sub) is True and len(folds) == 2
        assert sub.state["exit_code"] == 0
    finally:
        monkeypatch.undo()
        sub.close()
        hub.close()


def test_a_journaled_output_hole_is_folded_at_once(job: _Job) -> None:
    hub = OutputHub(LineWriter(io.BytesIO()))
    sub = _Follow(JobView(JOB, "0", job.dir), 0)
    try:
        hub._over(sub)
        job.journal.append("metric", values={"loss": 0.5})
        hub._over(sub)
        job.journal.append("event", event="output_dropped", data={"from": 10, "to": 20})
        assert hub._over(sub) is False
        assert sub.view.fields["output_gap"] == [10, 20]
    finally:
        sub.close()
        hub.close()


def test_an_output_hub_following_nothing_does_not_poll(job: _Job) -> None:
    assert wait_seconds([]) is None  # woken by follow or close only
    sub = _Follow(JobView(JOB, "0", job.dir), 0)
    assert wait_seconds([sub]) == outputhub.POLL_SECONDS
    sub.held_at = 10.0  # a line held: the hub looks again when its hold ends
    assert wait_seconds([sub], 10.001) == pytest.approx(outputhub.HOLD_SECONDS - 0.001)


def test_a_line_printed_as_text_then_newline_is_one_push(job: _Job) -> None:
    """Issue 33: a job's Python (PYTHONUNBUFFERED) writes a line's text and its newline apart;
    the hub holds the text a moment for its end, so the line crosses SSH and the client once."""
    out = io.BytesIO()
    hub = OutputHub(LineWriter(out))
    sub = _Follow(JobView(JOB, "0", job.dir), 0)
    hub._subs[(JOB, "0")] = sub
    try:
        job.print(b'{"step": 1}')
        assert hub._pump((JOB, "0"), sub) is False and out.getvalue() == b""  # held
        job.print(b"\n")
        hub._pump((JOB, "0"), sub)
        job.print(b"50%|#####     | 5/10")  # a bar's frame that stays open: sent once its hold ends
        wait_for(lambda: hub._pump((JOB, "0"), sub) or len(_pushes(out)) == 2, what="the open line")
    finally:
        sub.close()
        hub.close()
    pushes = [base64.b64decode(p["data"]) for p in _pushes(out)]
    assert pushes == [b'{"step": 1}\n', b"50%|#####     | 5/10"]
    assert [p["offset"] for p in _pushes(out)] == [0, 12]


# -- TailHub ----------------------------------------------------------------------------------------


def test_an_idle_tail_hub_does_not_poll_and_wakes_for_a_subscription(
    job: _Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeouts: list[float | None] = []
    real_wait = Watcher.wait

    def wait(self: Watcher, timeout: float | None) -> None:
        timeouts.append(timeout)
        real_wait(self, timeout)

    monkeypatch.setattr(Watcher, "wait", wait)
    out = io.BytesIO()
    hub = TailHub(LineWriter(out))
    try:
        wait_for(lambda: timeouts, what="the idle hub's first wait")
        assert timeouts == [None]  # no subscription: no timed poll (it still waits there)
        hub.subscribe(JOB, "0", job.dir / "events.jsonl", since_seq=0)
        wait_for(
            lambda: b'"push":"events"' in out.getvalue(), what="the journal pushed after subscribe's wake"
        )
        wait_for(lambda: tailhub.POLL_SECONDS in timeouts, what="the fallback poll while subscribed")
        hub.unsubscribe(JOB, "0")
        wait_for(lambda: timeouts[-1] is None, what="the untimed wait again")
    finally:
        hub.close()
    thread: threading.Thread = hub._thread
    thread.join(10)
    assert not thread.is_alive()  # close wakes the untimed wait


def test_an_end_journaled_just_before_the_supervisor_exits_is_not_lost(
    job: _Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a fast-exiting job hit in CI: the view read the journal, the supervisor then wrote
    its end and let go of the lock, and the lock check called the job lost."""
    from remote_agent import jobstate

    view = JobView(JOB, "0", job.dir)
    assert view.refresh()["state"] == "running"
    job.print(b"x\n")

    ended: list[bool] = []
    really_close = job.close

    def supervisor_gone(lock: Path) -> bool:  # between our read and this check, the end was written
        if not ended:
            job.journal.append("state", state="exited", exit_code=0)
            really_close()  # and the supervisor let go of its lock
            ended.append(True)
        return False

    monkeypatch.setattr(jobstate, "supervisor_alive", supervisor_gone)
    job.close = lambda: None  # type: ignore[method-assign]  # closed above, not again by the fixture
    state = view.refresh()
    assert (state["state"], state["exit_code"]) == ("exited", 0)
