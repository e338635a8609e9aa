"""The agent's `serve` over an SSH exec channel: the same JSON lines the local pipe carries.

Liveness does not rely on TCP: a frozen server still ACKs and paramiko's keepalive never waits for
a reply. `serve --heartbeat H` pushes a line every H seconds and we ping it as often; the channel's
read timeout (the silence limit, 4 H) turns silence into a TransportError naming the reason. Our pings
also let `serve` notice a client that vanished without a FIN, and exit.

The silence limit is the host's ~/.ssh/config ServerAliveInterval × ServerAliveCountMax when it
sets an interval (as `ssh` would give up after that many unanswered intervals), else `[ssh]
alive_timeout`; ServerAliveInterval also drives paramiko's own transport keepalive.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any

import paramiko

from ..hosts_file import HostEntry
from ..settings import SshSettings
from . import deploy_memo
from .agent_stream import AgentStream, ssh_stream
from .deploy import Deployed, DeployError, ensure_agent
from .hostkey_errors import HostKeyError
from .hostkeys import Confirm
from .push_pipe import PushPipe, watch_pipe
from .ssh_connect import AskPassphrase, Connection, SshError, connect
from .transport import ConnectionCut, Consumer, EndHandler, Transport, TransportError
from .warm_channel import WarmChannel, WarmPushPipe, WarmTransport
from .warm_memo import heartbeat_for, remember_fast_path, serve_line
from .warm_memo import memo_key as warm_memo_key

PING = b'{"id": "ping", "op": "ping"}\n'  # a string id: the client drops its answer unseen

_deployed: dict[tuple[str, str, str | None, str], Deployed] = {}
_deployed_lock = threading.Lock()


def serve_command(deployed: Deployed, heartbeat: float, sessions: bool = False) -> str:
    """`exec PY AGENT serve …`, every token quoted: the login shell only ever sees literals.
    sessions: the one serve a warm master shares between commands (warm_serve.py)."""
    return serve_line(deployed.python, deployed.agent, deployed.agent_dir, heartbeat, sessions)


class SshTransport(Transport):
    def __init__(
        self,
        entry: HostEntry,
        settings: SshSettings,
        confirm: Confirm | None = None,
        ask_passphrase: AskPassphrase | None = None,
    ) -> None:
        self.host = entry.name
        self.entry = entry
        self.settings = settings
        self.confirm = confirm  # unknown host key → ask the user (None: refuse)
        self.ask_passphrase = ask_passphrase  # encrypted key without ssh-agent (the TUI asks once)
        self.conn: Connection | None = None
        self.deployed: Deployed | None = None
        self._chan: paramiko.Channel | None = None
        self._file: Any = None
        self._write_lock = threading.Lock()
        self._closed = threading.Event()
        self.alive_timeout = settings.alive_timeout  # this host's silence limit, set on connect
        self._push: tuple[Consumer, EndHandler] | None = None

    @property
    def heartbeat(self) -> float:
        """How often serve pushes a heartbeat and we ping it: a quarter of the silence limit."""
        return heartbeat_for(self.alive_timeout)

    @property
    def _cache_key(self) -> tuple[str, str, str | None, str]:
        return (self.entry.name, self.entry.target, self.entry.python, self.entry.agent_dir)

    def connect(self) -> Connection:
        """Connect and authenticate only (hosts trust/add use this to check the key)."""
        try:
            alias = self.entry.extra.get("host_key_alias")
            self.conn = connect(
                self.entry.target,
                self.entry.identity_file,
                confirm=self.confirm,
                timeout=self.settings.connect_timeout,
                ask_passphrase=self.ask_passphrase,
                host_key_alias=alias if isinstance(alias, str) and alias else None,
            )
        except SshError as exc:
            raise TransportError(str(exc)) from None
        self.alive_timeout = self.conn.target.silence_limit(self.settings.alive_timeout)
        return self.conn

    def deploy(self, force: bool = False) -> Deployed:
        assert self.conn is not None
        with _deployed_lock:
            cached = None if force else _deployed.get(self._cache_key)
        warm = self.conn.transport if isinstance(self.conn.transport, WarmTransport) else None
        memo_key = warm_memo_key(self._cache_key)
        if cached is None and warm is not None and not force:  # found by an earlier command on this master
            found = warm.memo(memo_key)
            cached = Deployed(**{**found, "removed": ()}) if isinstance(found, dict) else None
        if cached is None:
            known = None if force else deploy_memo.recall(self._cache_key)
            try:
                cached = ensure_agent(self.conn, self.entry.python, self.entry.agent_dir, interpreter=known)
            except DeployError as exc:
                raise TransportError(f"{self.host}: {exc}") from None
            deploy_memo.remember(self._cache_key, cached.python)
            if warm is not None:
                warm.remember(memo_key, {**dataclasses.asdict(cached), "removed": []})
            with _deployed_lock:
                _deployed[self._cache_key] = cached
        self.deployed = cached
        return cached

    def push_to(self, consumer: Consumer, on_end: EndHandler) -> bool:
        """From the next open on, the agent's bytes go to consumer on paramiko's transport thread
        as each packet arrives (PushPipe), and on_end says once why they stopped; readline is unused."""
        self._push = (consumer, on_end)
        return True

    def _warm_connection(self) -> Connection | None:
        """The host's warm connection (warm.py), started if need be; None: connect directly."""
        from . import warm

        conn = warm.connection(self.entry, self.settings)
        if conn is not None:
            self.conn = conn
            self.alive_timeout = conn.target.silence_limit(self.settings.alive_timeout)
        return conn

    def open(self) -> None:
        # HostKeyError passes through untouched: the CLI turns it into its own exit code.
        self._closed.clear()
        for _ in range(2):  # a master that went away between its check and our command: once more
            conn = self._warm_connection()
            if conn is None:
                break
            try:
                return self._start_agent(conn)
            except ConnectionCut:
                continue
        self._start_agent(self.connect())  # no warm connection: as before, with every question asked

    def _start_agent(self, conn: Connection) -> None:
        pipe: Any = None
        try:
            deployed = self.deploy()
            chan = conn.transport.open_session(timeout=self.settings.connect_timeout)
            chan.settimeout(self.alive_timeout)
            if self._push is not None and isinstance(chan, WarmChannel):
                pipe = chan.push = WarmPushPipe(self._push[0])
            elif self._push is not None:  # before exec: the agent's first byte must not miss it
                pipe = chan.in_buffer = PushPipe(chan, self._push[0])
            if isinstance(conn.transport, WarmTransport):  # a session of the master's one serve
                chan.join_serve(serve_command(deployed, self.heartbeat, sessions=True), self.heartbeat)
                remember_fast_path(conn.transport, self.entry, self.settings, deployed, self.alive_timeout)
            else:
                chan.exec_command(serve_command(deployed, self.heartbeat))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            cut = not conn.transport.is_active()
            conn.close()
            raise (ConnectionCut if cut else TransportError)(
                f"{self.host}: cannot start the agent: {exc}"
            ) from None
        except TransportError as exc:  # the probe or the upload broke off: a cut when the link is gone
            cut = not conn.transport.is_active()
            conn.close()
            if cut and not isinstance(exc, ConnectionCut):
                raise ConnectionCut(f"{exc} (the connection broke)") from None
            raise
        except HostKeyError:
            conn.close()
            raise
        self._chan = chan
        if pipe is not None and self._push is not None:
            threading.Thread(
                target=watch_pipe,
                name=f"watch-{self.host}",
                daemon=True,
                args=(pipe, self.alive_timeout, self._closed, self._push[1], self._eof_reason),
            ).start()
        else:
            self._file = chan.makefile("rb", 1 << 16)
        threading.Thread(target=self._ping_loop, name=f"ping-{self.host}", daemon=True).start()

    def open_stream(self, argv: list[str]) -> AgentStream:
        conn, deployed = self.conn, self.deployed
        if conn is None or deployed is None or not conn.transport.is_active():
            raise TransportError(f"{self.host}: not connected")
        return ssh_stream(
            conn.transport,
            deployed.python,
            deployed.agent,
            deployed.agent_dir,
            argv,
            self.settings.connect_timeout,
        )

    def readline(self) -> bytes:
        if self._file is None:
            return b""
        try:
            line: bytes = self._file.readline()
        except TimeoutError:
            raise TransportError(
                f"no word from the agent for {self.alive_timeout:g} s (host frozen or network down)"
            ) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"connection broke: {exc}") from None
        if not line and not self._closed.is_set():
            raise TransportError(self._eof_reason())
        return line

    def read_lines(self, size: int) -> bytes:
        if self._file is None:
            return b""
        try:
            data: bytes = self._file.read(size)
        except TimeoutError:
            raise TransportError(
                f"no word from the agent for {self.alive_timeout:g} s (host frozen or network down)"
            ) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise TransportError(f"connection broke: {exc}") from None
        if len(data) < size and not self._closed.is_set():
            raise TransportError(self._eof_reason())
        return data

    def _eof_reason(self) -> str:
        chan = self._chan
        if chan is None or not chan.get_transport() or not chan.get_transport().is_active():
            return "the SSH connection closed"
        err = b""
        with contextlib.suppress(Exception):
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(4096)
        chan.status_event.wait(1.0)  # the exit status follows the EOF closely: say it
        status = chan.exit_status if chan.exit_status_ready() else None
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        if self.deployed is not None and "can't open file" in last[0]:
            with _deployed_lock:  # the zipapp went away under us: deploy again on the next open
                _deployed.pop(self._cache_key, None)
            conn = self.conn
            if conn is not None and isinstance(conn.transport, WarmTransport):
                conn.transport.remember(warm_memo_key(self._cache_key), None)
        if status is not None and status != 0:  # the remembered python may be gone: probe next time
            deploy_memo.forget(self._cache_key)
        return f"the agent exited (status {status}){': ' + last[0][:200] if last[0] else ''}"

    def write(self, data: bytes) -> None:
        chan = self._chan
        if chan is None:
            raise TransportError(f"{self.host}: not connected")
        with self._write_lock:
            try:
                chan.sendall(data)
            except TimeoutError:
                raise TransportError(f"{self.host}: the agent stopped reading (host frozen?)") from None
            except (OSError, EOFError, paramiko.SSHException) as exc:
                raise TransportError(f"{self.host}: connection broke: {exc}") from None

    def _ping_loop(self) -> None:
        while not self._closed.wait(self.heartbeat):
            try:
                self.write(PING)
            except TransportError:
                return  # the reader sees the same break and reports it

    def close(self) -> None:
        self._closed.set()
        chan, self._chan, conn, self.conn = self._chan, None, self.conn, None
        if chan is not None:
            with contextlib.suppress(Exception):
                chan.close()
        if conn is not None:
            conn.close()
