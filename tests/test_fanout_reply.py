"""The listing's hosts asked at once (tui/actions/fanout.py) and the agent client's awaited answers
(tui/remote/reply.py): what ThreadPoolExecutor.map and Future gave them."""

from __future__ import annotations

import threading
import time

import pytest

from tui.actions.fanout import each_at_once
from tui.remote.reply import Reply


def test_answers_come_in_the_items_order_at_most_workers_at_once() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def ask(n: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.01 * (5 - n))  # the first ones finish last
        with lock:
            running -= 1
        return n * 10

    assert each_at_once(ask, list(range(5)), workers=2) == [0, 10, 20, 30, 40]
    assert most <= 2
    assert each_at_once(ask, [], workers=16) == []


def test_the_first_failure_in_order_is_raised_after_every_item_ran() -> None:
    ran: list[int] = []

    def ask(n: int) -> int:
        ran.append(n)
        if n in (1, 3):
            raise ValueError(f"item {n}")
        return n

    with pytest.raises(ValueError, match="item 1"):
        each_at_once(ask, [0, 1, 2, 3], workers=4)
    assert sorted(ran) == [0, 1, 2, 3]


def test_a_reply_gives_its_answer_or_raises_its_error_or_times_out() -> None:
    reply: Reply[int] = Reply()
    with pytest.raises(TimeoutError):
        reply.result(0.01)
    threading.Timer(0.01, reply.set_result, (7,)).start()
    assert reply.result(5) == 7 and reply.done()
    with pytest.raises(RuntimeError):  # answered once only, as Future refuses a second answer
        reply.set_exception(ValueError("late"))
    failed: Reply[int] = Reply()
    failed.set_exception(KeyError("gone"))
    with pytest.raises(KeyError):
        failed.result(0)
