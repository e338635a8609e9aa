"""A local port forwarded to a port on a host, over that host's SSH connection (its jump hosts and
config as gpudeck resolves them): `gpudeck forward`. Each local connection gets its own
`direct-tcpip` channel to 127.0.0.1:PORT as the host sees it. A connection cut is survived: the next
local connection (or the one that found the transport dead) connects again. Ends on `stop`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

import paramiko

from .ssh_connect import Connection

CHUNK = 1 << 18  # from the local client
# A wider window than paramiko's 2 MiB: the far side stalls less often waiting for our adjust
# (bench/bench_forward.py: download through the forward vs ssh -L).
WINDOW_SIZE = 8 << 20
MAX_PACKET = 1 << 15  # paramiko's largest: what OpenSSH's sshd accepts


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
        # Two locks: `_connecting` is held through an SSH handshake (seconds; up to the connect
        # timeout when the host is gone), `_lock` only to swap `_conn`, so `close` (Ctrl-C) never
        # waits for a reconnect in flight.
        self._lock = threading.Lock()
        self._connecting = threading.Lock()
        self.stop = threading.Event()
        self.errors: list[str] = []  # what a refused channel said (the port not open on the host…)

    def _channel(self, peer: tuple[str, int]) -> paramiko.Channel:
        for attempt in (1, 2):
            conn = self._live()
            try:
                chan: paramiko.Channel = conn.transport.open_channel(
                    "direct-tcpip",
                    ("127.0.0.1", self.remote_port),
                    peer,
                    timeout=15,
                    window_size=WINDOW_SIZE,
                    max_packet_size=MAX_PACKET,
                )
                return chan
            except (paramiko.SSHException, OSError, EOFError):
                if attempt == 2 or conn.active:
                    raise
                with self._lock:  # cut under us: connect again once
                    if self._conn is conn:
                        self._conn = None
                conn.close()
        raise AssertionError("unreachable")

    def _live(self) -> Connection:
        """The host's connection, connected again when it was cut (one handshake at a time)."""
        with self._connecting:
            with self._lock:
                conn = self._conn
            if conn is not None and conn.active:
                return conn
            if conn is not None:
                conn.close()
            if self.stop.is_set():
                raise EOFError("forward closed")
            conn = self._connect()
            with self._lock:
                if not self.stop.is_set():
                    self._conn = conn
                    return conn
            conn.close()  # closed while it connected: nothing may keep it open
            raise EOFError("forward closed")

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
            if not self.stop.is_set():  # closing is no error of the host's
                self.errors.append(str(exc) or type(exc).__name__)
            client.close()
            return
        # One thread per direction, blocking reads: no select round per chunk, both directions at
        # once, and an EOF is passed on as a half-close (a client that shuts its write side still
        # gets the answer), as `ssh -L` does. The connection ends when both directions have.
        up = threading.Thread(
            target=self._copy, args=(client.recv, chan.sendall, chan.shutdown_write), daemon=True
        )
        up.start()
        # Read all the channel holds at once: paramiko's buffer deletes what is read from its front,
        # moving the rest, so reads smaller than what piled up cost quadratic time (a download fell
        # to ~20 % of ssh -L with 256 KiB reads under load).
        self._copy(lambda _n: chan.recv(WINDOW_SIZE), client.sendall, lambda: client.shutdown(socket.SHUT_WR))
        transport = chan.get_transport()
        if transport is None or not transport.is_active():  # cut: nothing the client sends can go on
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
        up.join()
        chan.close()
        client.close()

    def _copy(
        self, recv: Callable[[int], bytes], send: Callable[[bytes], object], eof: Callable[[], object]
    ) -> None:
        try:
            while not self.stop.is_set():
                data = recv(CHUNK)
                if not data:
                    break
                send(data)
        except (OSError, EOFError, paramiko.SSHException):
            pass
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            eof()

    def close(self) -> None:
        self.stop.set()
        with contextlib.suppress(OSError):
            self.local.close()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def listen(local_port: int, bind: str = "127.0.0.1") -> socket.socket:
    """The local end, bound before the host is asked anything (a taken port fails first)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((bind, local_port))
    sock.listen(16)
    return sock
