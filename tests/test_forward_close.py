"""Issue 35, ports: `gpudeck forward`'s Ctrl-C (Forward.close) does not wait for a reconnect in
flight (an SSH handshake to a host that went away can take the whole connect timeout), and the
connection that handshake makes after the close is closed, not left open."""

from __future__ import annotations

import socket
import threading
from typing import cast

import pytest

from tests.support.waiting import wait_for
from tui.remote.forward import Forward, listen
from tui.remote.ssh_connect import Connection


class SlowHandshake:
    """A connect that blocks until released, as a handshake to an unreachable host does."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.made: list[FakeConnection] = []

    def __call__(self) -> Connection:
        self.entered.set()
        self.release.wait(60)
        conn = FakeConnection()
        self.made.append(conn)
        return cast(Connection, conn)


class FakeConnection:
    def __init__(self) -> None:
        self.closed = False

    @property
    def active(self) -> bool:
        return not self.closed

    def close(self) -> None:
        self.closed = True


@pytest.mark.timeout(60)
def test_close_does_not_wait_for_a_reconnect_and_closes_what_it_made() -> None:
    connect = SlowHandshake()
    fwd = Forward(connect, 8000, listen(0))  # no first connection: the first client connects
    threading.Thread(target=fwd.serve, daemon=True).start()
    client = socket.create_connection(fwd.local.getsockname(), timeout=10)
    try:
        assert connect.entered.wait(30)  # the handshake is in flight, holding the connect lock
        closed = threading.Event()
        threading.Thread(target=lambda: (fwd.close(), closed.set()), daemon=True).start()
        wait_for(closed.is_set, timeout=20, what="close() returning while the handshake still runs")
        assert not connect.release.is_set()
        connect.release.set()  # the handshake ends after the close: its connection is closed
        wait_for(
            lambda: connect.made and connect.made[0].closed, timeout=20, what="the late connection closed"
        )
        assert fwd.errors == []  # closing is not the host's error
    finally:
        connect.release.set()
        client.close()
