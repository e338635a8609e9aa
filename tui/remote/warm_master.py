"""A host's warm connection: a detached process holding one authenticated SSH connection, serving
remote commands to this user's later gpudeck commands as new channels on it (OpenSSH's
ControlMaster + ControlPersist, for paramiko). Run as `python -m tui.remote.warm_master CONFIG`.

It connects with the same code as a direct connection (ssh_connect.connect: ~/.ssh/config, jumps,
known_hosts), but asks nobody: an unknown key or a key needing a passphrase is reported to the
command that started it, which then connects itself, as before. It reports one JSON line on stdout,
then talks only to its socket (warm_frames.py) and its 0600 log. It ends when idle for `persist`
seconds, when asked (`gpudeck hosts disconnect`), or when its SSH connection ends, removing its
socket first so the next command starts a fresh one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
import sys
import threading
import time
from typing import Any

import paramiko

from . import warm_frames as frames
from .hostkey_errors import HostKeyError
from .ssh_connect import Connection, SshError, connect
from .warm_relay import Relay
from .warm_serve import NotStarted, Serves, carry

_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def log(line: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {line}\n")
    sys.stderr.flush()


def peer_uid(sock: socket.socket) -> int:
    _pid, uid, _gid = _CRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))
    return uid


def answers(path: str, timeout: float = 2.0) -> bool:
    """A master is listening on path (its accept may wait for its connect: only the connect counts)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except OSError:
            return False
    return True


class Master:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.name = str(config["name"])
        self.path = str(config["socket"])
        self.persist = float(config["persist"])
        self.conn: Connection | None = None
        self.listener: socket.socket | None = None
        self.inode = 0
        self.busy = 0  # channels open now
        self.last_used = time.monotonic()
        self.memo: dict[str, Any] = {}  # what a command learnt once for all (the deployed agent)
        self.serves = Serves(lambda line: log(f"{self.name}: {line}"))  # the host's `serve --sessions`
        self.lock = threading.Lock()

    # -- start -------------------------------------------------------------------------------------

    def bind(self) -> bool:
        """Bind the socket (0600); False: a live master already holds it."""
        if answers(self.path):
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a dead master's socket
        listener = socket.socket(socket.AF_UNIX)
        old = os.umask(0o177)
        try:
            listener.bind(self.path)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        listener.listen(64)
        self.listener, self.inode = listener, os.stat(self.path).st_ino
        return True

    def start(self) -> dict[str, Any]:
        """Bind and connect, under a lock so two commands starting at once make one master."""
        with open(self.path + ".lock", "a") as lock:
            os.chmod(self.path + ".lock", 0o600)
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.bind():
                return {"ok": True, "existing": True}
            c = self.config
            try:
                self.conn = connect(
                    c["target"],
                    c.get("identity_file"),
                    confirm=None,
                    timeout=float(c["timeout"]),
                    ask_passphrase=None,
                    host_key_alias=c.get("host_key_alias"),
                )
            except HostKeyError as exc:
                self.unlink()
                return {"ok": False, "kind": "hostkey", "error": str(exc)}
            except SshError as exc:
                self.unlink()
                said = str(exc)
                auth = "permission denied" in said or "authentication" in said or "login" in said
                return {"ok": False, "kind": "auth" if auth else "unreachable", "error": said}
            except Exception as exc:  # anything else: the command connects itself
                self.unlink()
                return {"ok": False, "kind": "other", "error": f"{type(exc).__name__}: {exc}"}
        return {"ok": True, "pid": os.getpid()}

    def unlink(self) -> None:
        """Remove the socket if it is still ours (a newer master may have taken the name)."""
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)

    def end(self, why: str) -> None:
        self.unlink()
        log(f"{self.name}: ended ({why})")
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        os._exit(0)

    # -- serve -------------------------------------------------------------------------------------

    def serve(self) -> None:
        assert self.listener is not None and self.conn is not None
        transport = self.conn.transport
        threading.Thread(target=self._watch, args=(transport,), daemon=True).start()
        self.listener.settimeout(max(0.05, min(1.0, self.persist / 4)))
        while True:
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                with self.lock:
                    idle = self.busy == 0 and time.monotonic() - self.last_used >= self.persist
                if idle:
                    self.end(f"idle for {self.persist:g} s")
                if not os.path.exists(self.path):
                    self.end("its socket was removed")
                continue
            uid = peer_uid(client)
            if uid != os.getuid():
                log(f"{self.name}: refused a connection from uid {uid}")
                with contextlib.suppress(OSError):
                    frames.send(client, b"F", f"refused: uid {uid} is not this master's user".encode())
                client.close()
                continue
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _watch(self, transport: paramiko.Transport) -> None:
        transport.join()  # paramiko's Transport is its own thread: it ends with the connection
        self.end("the SSH connection closed")

    def _handle(self, client: socket.socket) -> None:
        try:
            first = frames.recv(client)
            if first is None:
                return
            kind, payload = first
            if kind == b"Q":
                self._query(client, json.loads(payload))
            elif kind == b"E":
                self._run(client, json.loads(payload))
            elif kind == b"V":
                self._session(client, json.loads(payload))
            else:
                frames.send(client, b"F", f"unknown request {kind!r}".encode())
        except (OSError, ValueError, frames.FrameError) as exc:
            log(f"{self.name}: a client's connection failed: {exc}")
        finally:
            client.close()

    def _query(self, client: socket.socket, query: dict[str, Any]) -> None:
        op = query.get("op")
        assert self.conn is not None
        if op == "check":
            frames.send_json(
                client, b"A", {"pid": os.getpid(), "active": self.conn.active, "host": self.name}
            )
        elif op == "exit":
            frames.send_json(client, b"A", {"pid": os.getpid()})
            self.end("asked to")
        elif op == "memo_get":
            frames.send_json(client, b"A", {"value": self.memo.get(str(query.get("key")))})
        elif op == "memo_put":
            self.memo[str(query.get("key"))] = query.get("value")
            frames.send_json(client, b"A", {})
        else:
            frames.send(client, b"F", f"unknown query {op!r}".encode())

    def _run(self, client: socket.socket, request: dict[str, Any]) -> None:
        assert self.conn is not None
        with self.lock:
            self.busy += 1
        try:
            try:
                chan = self.conn.transport.open_session(
                    window_size=request.get("window"), max_packet_size=request.get("packet"), timeout=15
                )
                chan.exec_command(str(request["command"]))
            except (paramiko.SSHException, OSError, EOFError) as exc:
                frames.send(client, b"F", f"cannot open a channel: {exc}".encode())
                if not isinstance(exc, paramiko.ChannelException):  # not a refusal (MaxSessions): no answer
                    self.end(
                        f"no channel opened: {exc}"
                    )  # a link dead without a FIN: the next command starts anew
                return
            frames.send_json(client, b"A", {"ok": True})
            Relay(client, chan).run()
        finally:
            with self.lock:
                self.busy -= 1
                self.last_used = time.monotonic()

    def _session(self, client: socket.socket, request: dict[str, Any]) -> None:
        """One command's agent conversation as a session of the shared serve (warm_serve.py)."""
        assert self.conn is not None
        try:
            serve = self.serves.shared(
                self.conn.transport, str(request["command"]), float(request["heartbeat"])
            )
        except (paramiko.SSHException, OSError, EOFError) as exc:
            frames.send(client, b"F", f"cannot start the shared serve: {exc}".encode())
            if not isinstance(
                exc, (paramiko.ChannelException, NotStarted)
            ):  # not a refusal: the link is dead
                self.end(f"no channel opened: {exc}")
            return
        with self.lock:
            self.busy += 1
        try:
            carry(serve, client)
        finally:
            with self.lock:
                self.busy -= 1
                self.last_used = time.monotonic()


def main(argv: list[str]) -> int:
    master = Master(json.loads(argv[1]))
    report = master.start()
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # the starting command reads one line; nothing else goes its way
    os.dup2(devnull, 0)
    if not report["ok"] or report.get("existing"):
        if not report["ok"]:
            log(f"{master.name}: {report['error']}")
        return 0
    log(f"{master.name}: connected, persisting {master.persist:g} s")
    master.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
