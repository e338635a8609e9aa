"""A local port forwarded to a port on a host, over that host's SSH connection (its jump hosts and
config as gpudeck resolves them): `gpudeck forward`. Each local connection gets its own
`direct-tcpip` channel to 127.0.0.1:PORT as the host sees it. A connection cut is survived: the next
local connection (or the one that found the transport dead) connects again. Ends on `stop`.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Callable

import paramiko

from .ssh_connect import Connection

CHUNK = 65536


class Forward:
    def __init__(
        self,
        connect: Callable[[], Connection],
        remote_port: int,
        local: socket.socket,
        first: Connection | None = None,
    ) -> None:
        self._connect = connect
        self.remote_port = remote_port
        self.local = local  # listening already: its port is known before anything is asked
        self._conn: Connection | None = first  # made by the caller, which says why it could not
        self._lock = threading.Lock()
        self.stop = threading.Event()
        self.errors: list[str] = []  # what a refused channel said (the port not open on the host…)

    def _channel(self, peer: tuple[str, int]) -> paramiko.Channel:
        for attempt in (1, 2):
            with self._lock:
                if self._conn is None or not self._conn.active:
                    if self._conn is not None:
                        self._conn.close()
                    self._conn = self._connect()
                conn = self._conn
            try:
                chan: paramiko.Channel = conn.transport.open_channel(
                    "direct-tcpip", ("127.0.0.1", self.remote_port), peer, timeout=15
                )
                return chan
            except (paramiko.SSHException, OSError, EOFError):
                if attempt == 2 or conn.active:
                    raise
                with self._lock:  # cut under us: connect again once
                    self._conn = None
        raise AssertionError("unreachable")

    def serve(self) -> None:
        """Accept until `stop` is set (call from the main thread; Ctrl-C sets nothing: the caller's)."""
        self.local.settimeout(0.2)
        while not self.stop.is_set():
            try:
                client, peer = self.local.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            threading.Thread(target=self._pump, args=(client, peer), daemon=True).start()

    def _pump(self, client: socket.socket, peer: tuple[str, int]) -> None:
        try:
            chan = self._channel(peer)
        except Exception as exc:  # noqa: BLE001 - refused port, host down, key changed: said, not raised
            self.errors.append(str(exc) or type(exc).__name__)
            client.close()
            return
        try:
            while not self.stop.is_set():
                ready, _, _ = select.select([client, chan], [], [], 0.5)
                if client in ready:
                    data = client.recv(CHUNK)
                    if not data:
                        break
                    chan.sendall(data)
                if chan in ready:
                    data = chan.recv(CHUNK)
                    if not data:
                        break
                    client.sendall(data)
        except (OSError, EOFError, paramiko.SSHException):
            pass
        finally:
            chan.close()
            client.close()

    def close(self) -> None:
        self.stop.set()
        with contextlib.suppress(OSError):
            self.local.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def listen(local_port: int, bind: str = "127.0.0.1") -> socket.socket:
    """The local end, bound before the host is asked anything (a taken port fails first)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((bind, local_port))
    sock.listen(16)
    return sock
