"""An SSH host's agent pipe that tries the warm master's shared serve first, loading no paramiko.

When a host's master is up and remembers what an earlier command learnt (the deployed agent for
this very agent build, and the host's silence limit: `remember_fast_path`), a command's agent
conversation is a session of the master's one `serve --sessions` (warm_serve.py): one unix
connection, no SSH code, no probe, no new process on the host. Anything else (no master, nothing
remembered, a refusal) goes the full way through SshTransport, as before, which starts the master
and remembers for the next command.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..hosts_file import HostEntry
from ..settings import SshSettings
from ..ssh_persist import effective
from . import warm_paths
from .transport import Consumer, EndHandler, Transport, TransportError
from .warm_channel import WarmChannel, WarmPushPipe, WarmTransport, query
from .warm_memo import fast_key, heartbeat_for, memo_key, serve_line

if TYPE_CHECKING:
    from .agent_stream import AgentStream
    from .hostkeys import Confirm
    from .ssh_connect import AskPassphrase, Connection
    from .ssh_transport import SshTransport

PING = b'{"id": "ping", "op": "ping"}\n'  # as ssh_transport's: the client drops its answer unseen


class WarmFirstTransport(Transport):
    def __init__(
        self,
        entry: HostEntry,
        settings: SshSettings,
        confirm: Confirm | None = None,
        ask_passphrase: AskPassphrase | None = None,
    ) -> None:
        self.host = entry.name
        self.entry, self.settings = entry, settings
        self._asks = (confirm, ask_passphrase)
        self._direct: SshTransport | None = None
        self._session: WarmChannel | None = None
        self._where: dict[str, Any] = {}
        self._push: tuple[Consumer, EndHandler] | None = None
        self._file: Any = None
        self._closed = threading.Event()
        self._write_lock = threading.Lock()
        self.alive_timeout = settings.alive_timeout

    def __getattr__(self, name: str) -> Any:
        """What else callers read of an SshTransport (its channel, its connection) once it is used."""
        direct = self.__dict__.get("_direct")
        if direct is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(direct, name)

    def _ssh(self) -> SshTransport:
        if self._direct is None:
            from .ssh_transport import SshTransport  # paramiko: only on the full way

            self._direct = SshTransport(self.entry, self.settings, *self._asks)
        return self._direct

    def connect(self) -> Connection:
        """Connect and authenticate only, as SshTransport.connect (a key check)."""
        return self._ssh().connect()

    def push_to(self, consumer: Consumer, on_end: EndHandler) -> bool:
        self._push = (consumer, on_end)
        return True

    def open(self) -> None:
        self._closed.clear()
        if self._open_session():
            return
        direct = self._ssh()
        if self._push is not None:
            direct.push_to(*self._push)
        direct.open()

    def _open_session(self) -> bool:
        """A session of the master's shared serve; False: go the full way."""
        self._session = None
        try:
            if effective(self.settings.persist) <= 0:
                return False
            path = warm_paths.socket_path(self.entry)
        except (ValueError, OSError):
            return False  # the full way says what is wrong, in its own words
        answer = query(path, {"op": "memo_get", "key": fast_key(self.entry, self.settings)})
        where = answer.get("value") if answer else None
        if not isinstance(where, dict):
            return False
        alive = float(where["alive_timeout"])
        beat = heartbeat_for(alive)
        try:
            chan = WarmChannel(WarmTransport(path), timeout=self.settings.connect_timeout)
            pipe = chan.push = WarmPushPipe(self._push[0]) if self._push is not None else None
            chan.join_serve(serve_line(where["python"], where["agent"], where["agent_dir"], beat, True), beat)
        except OSError:
            self._forget(WarmTransport(path))  # e.g. its zipapp is gone: the full way deploys anew
            return False
        self._session, self._where, self.alive_timeout = chan, where, alive
        if pipe is not None and self._push is not None:
            on_end = self._push[1]
            threading.Thread(
                target=self._watch, args=(pipe, on_end), name=f"watch-{self.host}", daemon=True
            ).start()
        else:
            chan.settimeout(alive)
            self._file = chan.makefile("rb", 1 << 16)
        threading.Thread(target=self._ping_loop, args=(beat,), name=f"ping-{self.host}", daemon=True).start()
        return True

    def _forget(self, master: WarmTransport) -> None:
        e = self.entry
        master.remember(fast_key(e, self.settings), None)
        master.remember(memo_key((e.name, e.target, e.python, e.agent_dir)), None)  # ssh_transport's

    def _watch(self, pipe: WarmPushPipe, on_end: EndHandler) -> None:
        """watch_pipe's loop for a session: the end, a consumer's failure, or silence, said once."""
        import time

        limit = self.alive_timeout
        while True:
            pipe.changed.wait(limit / 4)
            pipe.changed.clear()
            if pipe.failure is not None:
                on_end(pipe.failure)
                return
            if pipe.closed:
                pipe.ended = True
                on_end(None if self._closed.is_set() else self._eof_reason())
                return
            if not pipe.busy and time.monotonic() - pipe.last_data > limit:
                pipe.ended = True
                on_end(f"no word from the agent for {limit:g} s (host frozen or network down)")
                return

    def _eof_reason(self) -> str:
        chan = self._session
        status = chan.exit_status if chan is not None and chan.exit_status_ready() else None
        return f"the agent exited (status {status})" if status is not None else "the warm connection closed"

    def _ping_loop(self, every: float) -> None:
        while not self._closed.wait(every):
            try:
                self.write(PING)
            except TransportError:
                return

    def readline(self) -> bytes:
        if self._direct is not None and self._session is None:
            return self._direct.readline()
        try:
            line: bytes = self._file.readline() if self._file is not None else b""
        except TimeoutError:
            raise TransportError(f"no word from the agent for {self.alive_timeout:g} s") from None
        except OSError as exc:
            raise TransportError(f"connection broke: {exc}") from None
        if not line and not self._closed.is_set():
            raise TransportError(self._eof_reason())
        return line

    def write(self, data: bytes) -> None:
        if self._session is None:
            if self._direct is None:
                raise TransportError(f"{self.host}: not connected")
            self._direct.write(data)
            return
        with self._write_lock:
            try:
                self._session.sendall(data)
            except OSError as exc:
                raise TransportError(f"{self.host}: connection broke: {exc}") from None

    def open_stream(self, argv: list[str]) -> AgentStream:
        if self._session is None:
            if self._direct is None:
                raise TransportError(f"{self.host}: not connected")
            return self._direct.open_stream(argv)
        from .agent_stream import ssh_stream

        w = self._where
        transport: Any = self._session.owner
        return ssh_stream(
            transport, w["python"], w["agent"], w["agent_dir"], argv, self.settings.connect_timeout
        )

    def close(self) -> None:
        self._closed.set()
        chan, self._session = self._session, None
        if chan is not None:
            chan.close()
        if self._direct is not None:
            self._direct.close()
