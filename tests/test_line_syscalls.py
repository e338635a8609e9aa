"""Issue 33 (CPU per followed line): a line a job prints costs its supervisor one read of
output.log and one write of the journal, no syscall that only finds nothing or restates a size."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from remote_agent.storage.journal import JournalWriter, read_all
from remote_agent.storage.layout import JobFiles
from remote_agent.supervision.supervisor import Supervisor
from tests.support.waiting import wait_for


def test_a_journal_write_is_one_syscall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = JournalWriter(tmp_path / "events.jsonl")
    calls: list[str] = []
    real_write, real_fstat = os.write, os.fstat
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append("write") or real_write(fd, data))
    monkeypatch.setattr(os, "fstat", lambda fd: calls.append("fstat") or real_fstat(fd))
    writer.append_many([("metric", {"values": {"loss": 0.5}})])
    monkeypatch.undo()
    writer.close()
    assert calls == ["write"]


def test_a_write_that_fails_part_way_is_cut_back_to_the_last_whole_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    writer = JournalWriter(path)
    writer.append("state", state="starting")
    real_write = os.write
    tries: list[int] = []

    def half_then_full(fd: int, data: bytes) -> int:
        tries.append(fd)
        if len(tries) == 1:
            return real_write(fd, data[: len(data) // 2])  # the disk took half the burst
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    writer.append_many([("metric", {"values": {"loss": 0.1 * k}}) for k in range(5)])
    monkeypatch.undo()
    assert path.read_bytes().endswith(b"\n") and [r["kind"] for r in read_all(path)] == ["state"]
    writer.append("state", state="running")  # the disk has room again: seq goes on without a gap
    writer.close()
    records = read_all(path)
    assert [r["seq"] for r in records] == [1, 2, 3]
    assert [r.get("event", r.get("state")) for r in records] == ["starting", "disk_full", "running"]


def test_a_printed_line_costs_the_reader_one_read_of_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = JobFiles(tmp_path)
    files.output.write_bytes(b"")
    sup = Supervisor(files, {"id": "j", "name": "n", "argv": ["true"], "workdir": str(tmp_path)})
    sup.journal = JournalWriter(files.journal)
    output_reads: list[bytes] = []
    real_read = os.read
    ours: set[int] = set()

    def read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        watch = sup._output_watch
        if watch is not None and fd not in (watch._fd, watch._wake_r) and fd not in ours:
            output_reads.append(data)
        return data

    job_stdout = open(files.output, "ab", buffering=0)  # noqa: SIM115 (held open as a job's stdout is)
    monkeypatch.setattr(os, "read", read)
    reader = threading.Thread(target=sup._follow_output, daemon=True)
    reader.start()
    try:
        wait_for(lambda: sup._output_watch is not None, what="the reader's watch")
        for step in range(1, 4):
            job_stdout.write(b"step=%d loss=0.5\n" % step)
            wait_for(
                lambda step=step: any(
                    r.get("values", {}).get("step") == step for r in read_all(files.journal)
                ),
                what=f"step {step} journaled",
            )
        first = next(i for i, data in enumerate(output_reads) if data)  # (the empty file at start)
        assert all(output_reads[first:]), f"a read that found nothing: {output_reads}"
    finally:
        sup._output_done.set()
        if sup._output_watch is not None:
            sup._output_watch.wake()
        reader.join(10)
        monkeypatch.undo()
        job_stdout.close()
        sup.journal.close()
    assert not reader.is_alive()
