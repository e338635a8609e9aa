"""Asking several hosts at once, on plain threads.

What ThreadPoolExecutor.map gave the listing (answers in the hosts' order, at most `workers` at a
time, the first failure in that order raised), without concurrent.futures: it loads logging, ~5 ms of
CPU at the start of every `ps`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def each_at_once(ask: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """ask(item) for every item, on up to `workers` threads; the answers in the items' order."""
    answers: list[R | None] = [None] * len(items)
    failures: list[BaseException | None] = [None] * len(items)
    left = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(left, None)
            if i is None:
                return
            try:
                answers[i] = ask(items[i])
            except BaseException as exc:  # raised in the caller's thread, as map's iterator does
                failures[i] = exc

    threads = [threading.Thread(target=work) for _ in range(max(1, min(workers, len(items))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for failure in failures:
        if failure is not None:
            raise failure
    return answers  # type: ignore[return-value]  # every slot answered: no failure was raised
