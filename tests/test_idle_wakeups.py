"""Issue 33, supervisors that cost nothing idle: while a job prints nothing, its supervisor and the
host's keeper sleep in the kernel with no timer shorter than a repeat heartbeat's (a request, the
command's end, new output or the other one's end wakes them). Checked without timing anything: each
thread's current syscall and its timeout, as the kernel shows them (/proc/PID/task/TID/syscall, and
the timeout's bytes from /proc/PID/mem), the way strace would."""

from __future__ import annotations

import contextlib
import os
import platform
import struct
import time
from pathlib import Path

import pytest

from remote_agent.supervision.keeper import LOCK_NAME
from remote_agent.supervision.pidwatch import read_pid
from tests.support.jobs import journal, launch, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 syscall numbers")

LONGEST_TICK = 20.0  # seconds: a timer shorter than this while idle is a poll (before: 1 s and 5 s)
READ, POLL, SELECT, WAIT4, FLOCK, FUTEX, EPOLL_WAIT, PSELECT6, PPOLL, EPOLL_PWAIT = (
    0, 7, 23, 61, 73, 202, 232, 270, 271, 281,
)  # fmt: skip
FUTEX_WAIT_BITSET = 9


def _seconds_at(pid: int, address: int) -> float:
    """A timespec/timeval's seconds (its first word), read from the process's memory."""
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(address)
        return float(struct.unpack("q", mem.read(8))[0])


def _short_timer(pid: int, line: str) -> str | None:
    """Why a thread's syscall line is a short sleep or no sleep at all; None: blocked for long."""
    fields = line.split()
    if fields[0] == "running" or len(fields) < 7:
        return "running"
    nr, args = int(fields[0]), [int(a, 16) for a in fields[1:7]]
    if nr in (READ, WAIT4, FLOCK):
        return None  # no timer at all
    if nr == FUTEX:
        if args[3] == 0:
            return None
        left = _seconds_at(pid, args[3])
        if args[1] & 0x7F == FUTEX_WAIT_BITSET:  # an absolute time (CPython's timed lock waits)
            left -= time.clock_gettime(time.CLOCK_REALTIME if args[1] & 256 else time.CLOCK_MONOTONIC)
        return None if left >= LONGEST_TICK else f"a futex wait of {left:.0f} s"
    if nr in (SELECT, PSELECT6, PPOLL):
        where = args[2] if nr == PPOLL else args[4]
        return None if where == 0 or _seconds_at(pid, where) >= LONGEST_TICK else "a short select/poll"
    if nr in (POLL, EPOLL_WAIT, EPOLL_PWAIT):
        ms = struct.unpack("i", struct.pack("I", args[2] & 0xFFFFFFFF))[0]
        return None if ms < 0 or ms >= LONGEST_TICK * 1000 else f"poll for {ms} ms"
    return f"syscall {nr}"


def short_timers(pid: int) -> dict[str, str]:
    """Each thread of `pid` that is running or will wake on a short timer, and why (empty: none)."""
    out = {}
    for tid in sorted(Path(f"/proc/{pid}/task").iterdir()):
        try:
            why = _short_timer(pid, (tid / "syscall").read_text())
        except (OSError, ValueError, struct.error):
            why = "gone or unreadable"
        if why is not None:
            out[tid.name] = why
    return out


@pytest.mark.slow  # ~3-6 s: the supervisor's first GPU look comes 2 s after its start
def has_inotify(pid: int) -> bool:
    """The process holds an inotify instance (the user's are limited, 128 by default, and shared
    with every other process of the user: beyond them a supervisor's reader polls, backing off)."""
    links = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed while we looked
            links.append(os.readlink(fd))
    return any("inotify" in link for link in links)


def test_an_idle_job_s_supervisor_and_the_keeper_sleep_until_something_happens(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    job = launch(client, workdir, ["sleep", "600"])
    wait_state(client, job["id"], {"running"})
    supervisor = journal(agent_dir, job["id"])[0]["supervisor_pid"]
    if not has_inotify(supervisor):
        client.request("kill", job=job["id"], node="0", timeout=60)
        pytest.skip("no inotify instance was left for this user: the supervisor's reader polls")
    try:
        # Before: the control poll every second, the reader's 1 s inotify timeout, the keeper check
        # every 5 s, the logger files' look every second, and the keeper's look at every job's lock
        # each second.
        wait_for(lambda: not short_timers(supervisor), timeout=30, what="the supervisor asleep")
        keeper = wait_for(lambda: read_pid(agent_dir / LOCK_NAME), timeout=30, what="the keeper's pid")
        wait_for(lambda: not short_timers(keeper), timeout=30, what="the keeper asleep")
        # Asleep with no timer, it still acts on a request at once: serve's signal wakes it.
        final = client.request("stop", job=job["id"], node="0", grace=5.0, timeout=60)
        assert final["state"] == "stopped"
    finally:
        with contextlib.suppress(Exception):
            client.request("kill", job=job["id"], node="0", timeout=60)
