"""Issue 33: the supervisor's loop sleeps until something is due, and what it must act on at once
wakes it: another thread's flag, a handled signal, and SIGCHLD when its command ends."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator

import pytest

from remote_agent.supervision.loopwake import LoopWake, WakingEvent

LONG = 60.0  # a wait nothing wakes would last this long: the test's own timeout fails it first


def _waits(wake: LoopWake) -> threading.Thread:
    waiter = threading.Thread(target=wake.wait, args=(LONG,), daemon=True)
    waiter.start()
    return waiter


@pytest.fixture
def armed() -> Iterator[LoopWake]:
    """Armed in this (main) thread as the supervisor arms it; the process's signal state put back."""
    before = signal.getsignal(signal.SIGCHLD)
    wake = LoopWake()
    wake.arm_signals()
    yield wake
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, before)


def test_a_flag_set_by_another_thread_wakes_the_wait() -> None:
    wake = LoopWake()
    flag = WakingEvent(wake.wake)
    waiter = _waits(wake)
    threading.Timer(0.1, flag.set).start()
    waiter.join(LONG / 2)
    assert not waiter.is_alive() and flag.is_set()


@pytest.mark.timeout(40)
def test_the_commands_end_wakes_the_wait_through_sigchld(armed: LoopWake) -> None:
    child = subprocess.Popen(["sleep", "0.2"])
    armed.wait(LONG)  # in the main thread, as the loop waits: the child's end must end it
    assert child.wait(timeout=5) == 0


@pytest.mark.timeout(40)
def test_a_handled_signal_wakes_the_wait(armed: LoopWake) -> None:
    got: list[int] = []
    before = signal.signal(signal.SIGUSR2, lambda signum, frame: got.append(signum))
    try:
        threading.Timer(0.1, signal.raise_signal, args=(signal.SIGUSR2,)).start()
        armed.wait(LONG)
    finally:
        signal.signal(signal.SIGUSR2, before)
    assert got == [signal.SIGUSR2]


def test_many_wakes_never_block_the_waker() -> None:
    wake = LoopWake()
    for _ in range(100_000):  # far past a pipe's buffer: a full pipe means a wake is pending
        wake.wake()
    wake.wait(0)  # drained in one go, without blocking
