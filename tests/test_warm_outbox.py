"""The warm master's per-session outbox (tui/remote/warm_outbox.py): a frame that finds the session
idle goes out from the caller at once (issue 33: no thread handoff on `logs -f`'s every line); a
command that does not read still never holds the caller up, and gets every frame in order."""

from __future__ import annotations

import socket
import threading
from typing import Any

from tests.support.waiting import wait_for
from tui.remote import warm_frames as frames
from tui.remote.warm_outbox import HIGH, Outbox


class _Recording:
    """A socket that says which thread sent each frame."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.senders: list[str] = []

    def send(self, data: bytes, flags: int = 0) -> int:
        self.senders.append(threading.current_thread().name)
        return self.sock.send(data, flags)

    def sendall(self, data: bytes) -> None:
        self.senders.append(threading.current_thread().name)
        self.sock.sendall(data)

    def shutdown(self, how: int) -> None:
        self.sock.shutdown(how)


def test_a_frame_to_an_idle_session_is_sent_by_the_caller() -> None:
    ours, theirs = socket.socketpair()
    recording = _Recording(ours)
    outbox = Outbox(recording, 1, lambda frame: None)  # type: ignore[arg-type]
    try:
        outbox.put(b"O", b'{"push":"output"}\n')
        assert recording.senders == [threading.current_thread().name]
        assert frames.recv(theirs) == (b"O", b'{"push":"output"}\n')
    finally:
        outbox.close()
        ours.close()
        theirs.close()


def test_a_command_that_does_not_read_holds_up_nothing_and_gets_every_frame_in_order() -> None:
    ours, theirs = socket.socketpair()
    told: list[bytes] = []
    outbox = Outbox(ours, 7, told.append)
    sent: list[bytes] = []
    try:
        for i in range(HIGH // 1000 + 200):  # past HIGH while nobody reads: each put returns at once
            payload = b"%08d" % i + b"x" * 992
            outbox.put(b"O", payload)
            sent.append(payload)
        assert told == [b"P 7\n"]  # paused at serve
        got: list[Any] = []
        while len(got) < len(sent):
            frame = frames.recv(theirs)
            assert frame is not None
            got.append(frame[1])
        assert got == sent
        wait_for(lambda: told == [b"P 7\n", b"R 7\n"], what="the resume once the queue drained")
        outbox.put(b"O", b"after")  # idle again: at once, still in order
        assert frames.recv(theirs) == (b"O", b"after")
    finally:
        outbox.close()
        ours.close()
        theirs.close()
