"""One answer that a thread waits for: the part of concurrent.futures.Future the agent client uses.

concurrent.futures loads logging (its regexes, traceback, textwrap): ~5 ms of CPU at every command's
start, for an object that is an Event and a slot."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class Reply(Generic[T]):
    """Set once (result or exception), read by any number of waiters."""

    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._done.is_set()

    def set_result(self, value: T) -> None:
        self._check_unset()
        self._value = value
        self._done.set()

    def set_exception(self, error: BaseException) -> None:
        self._check_unset()
        self._error = error
        self._done.set()

    def result(self, timeout: float | None = None) -> T:
        """The answer; its exception raised; TimeoutError when none came within `timeout` s."""
        if not self._done.wait(timeout):
            raise TimeoutError
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set with the event

    def _check_unset(self) -> None:
        if self._done.is_set():  # as Future's InvalidStateError: a second answer is a bug
            raise RuntimeError("this reply was already answered")
