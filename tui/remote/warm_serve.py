"""The warm master's one `serve --sessions` on its host, shared by the commands that come to it.

Each command (a `V` connection, warm_frames.py) becomes a session of it (remote_agent/serving/
sessions.py): the command's stdin bytes go out as `D sid len` frames, the session's bytes come back
as `O` frames, and the command's hang-up closes the session (`C sid`), which cancels its tails and
follows. So a warm command starts no Python on the host, and its answers are the same bytes a plain
`serve` would send. A serve that died (killed, its zipapp gone) is replaced on the next command; one
for another agent (the zipapp's hash changed) is ended once its last session leaves.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from typing import Any

from . import warm_frames as frames
from .warm_outbox import Outbox

START = b"S gpudeck-sessions"  # serve's first line (a login shell may print before it)
CHATTER_MAX = 8 << 20  # past this much before it, it is not our serve
START_WAIT = 60.0  # a python start on a loaded host; a login shell's profile before it
SILENT_BEATS = 4  # serve's `K` every heartbeat: this many missed and it is taken as frozen


class NotStarted(OSError):
    """serve ended (or said nothing) before its first line: the link is fine, the agent is not."""


class SharedServe:
    def __init__(self, transport: Any, command: str, heartbeat: float, log: Any) -> None:
        self.command = command
        self.heartbeat = heartbeat
        self._log = log
        self.sessions: dict[int, Outbox] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # sessions, and writes to the channel
        self.retired = False  # another agent's serve took over: end when the last session leaves
        self.dead = False
        self._ended = threading.Event()
        self.last_heard = time.monotonic()
        self.chan = transport.open_session(timeout=15)
        self.chan.exec_command(command)
        # A login shell's startup file that reads a line of stdin (tests/test_ssh_login_shells.py)
        # would eat the first session's `O`: it gets a keepalive, which serve ignores if it reads it.
        self.chan.sendall(b"K\n")
        self._file = self.chan.makefile("rb", 1 << 16)
        self._started = threading.Event()  # its first line came: it runs
        threading.Thread(target=self._read, name="shared-serve", daemon=True).start()
        if not self._started.wait(START_WAIT) or self.dead:
            self.close("it did not start")
            raise NotStarted(f"the agent did not start: {self._stderr() or 'no word from it'}")
        threading.Thread(target=self._keepalive, name="shared-serve-beat", daemon=True).start()

    def _stderr(self) -> str:
        """The last line serve wrote on stderr (a zipapp gone: python's `can't open file`)."""
        said = b""
        with contextlib.suppress(Exception):
            while self.chan.recv_stderr_ready():
                said += self.chan.recv_stderr(4096)
        lines = said.decode("utf-8", "replace").strip().splitlines()
        return lines[-1][:200] if lines else ""

    @property
    def usable(self) -> bool:
        """Running, and heard from within two heartbeats (its `K`): a link that died without a word
        gets a new serve, whose channel then fails to open and ends the master."""
        heard = time.monotonic() - self.last_heard < 2 * self.heartbeat + 1
        return heard and not self.dead and not self.retired and not self.chan.closed

    def join(self, client: socket.socket) -> int:
        """A new session for client; its hello follows the `A` the caller sends first."""
        with self._lock:
            sid = next(self._ids)
            self.sessions[sid] = Outbox(client, sid, self._write)
        return sid

    def open(self, sid: int) -> None:
        self._write(b"O %d\n" % sid)

    def send(self, sid: int, data: bytes) -> None:
        self._write(b"D %d %d\n" % (sid, len(data)) + data)

    def leave(self, sid: int) -> None:
        with self._lock:
            outbox = self.sessions.pop(sid, None)
            last = not self.sessions
        if outbox is not None:
            outbox.close()
        with contextlib.suppress(OSError, EOFError):
            self._write(b"C %d\n" % sid)
        if last and self.retired:
            self.close("another agent's serve took over")

    def close(self, why: str) -> None:
        if not self.dead:
            self._log(f"shared serve ended ({why})")
        self.dead = True
        self._ended.set()
        with contextlib.suppress(Exception):
            self.chan.close()

    def _write(self, data: bytes) -> None:
        with self._lock:
            self.chan.sendall(data)

    def _read(self) -> None:
        """serve's frames to their sessions' outboxes (warm_outbox.py): never waits on a command."""
        try:
            self._skip_chatter()
            while True:
                head = self._file.readline(64)
                if not head:
                    break
                self.last_heard = time.monotonic()
                parts = head.split()
                if parts[:1] == [b"D"] and len(parts) == 3:
                    data = self._file.read(int(parts[2]))
                    outbox = self.sessions.get(int(parts[1]))
                    if outbox is not None:
                        outbox.put(b"O", data)
                elif parts[:1] not in ([b"K"], [b"C"]):
                    self._log(f"shared serve out of step: {head[:80]!r}")
                    break
        except (OSError, EOFError, ValueError) as exc:
            self._log(f"shared serve's channel broke: {exc}")
        finally:
            self.close("its channel closed")
            self._started.set()  # a start waiting on it sees it dead
            self._end_sessions()

    def _skip_chatter(self) -> None:
        skipped = 0
        while skipped < CHATTER_MAX:
            line = self._file.readline(1 << 16)
            if START in line:
                self._started.set()
                return
            if not line:
                raise EOFError("serve ended before it started")
            skipped += len(line)
        raise ValueError(f"no serve start in the first {skipped >> 20} MiB")

    def _end_sessions(self) -> None:
        """Every session's client learns the serve is gone: exit status -1, then `Z`."""
        with self._lock:
            outboxes = list(self.sessions.values())
        for outbox in outboxes:
            outbox.put(b"S", json.dumps(-1).encode())
            outbox.put(b"Z", b"")
            outbox.finish()

    def _keepalive(self) -> None:
        """`K` every heartbeat, so serve's silence check keeps it; and the end of one that froze."""
        while not self._ended.wait(self.heartbeat):
            if time.monotonic() - self.last_heard > SILENT_BEATS * self.heartbeat:
                self.close(f"silent for {SILENT_BEATS * self.heartbeat:g} s")
                return
            try:
                self._write(b"K\n")
            except (OSError, EOFError):
                return


class Serves:
    """A master's shared serves, by command: the running one for a command, else a new one; the
    others retire (an upgrade: another zipapp) and end once their last session leaves."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self._by_command: dict[str, SharedServe] = {}
        self._lock = threading.Lock()

    def shared(self, transport: Any, command: str, heartbeat: float) -> SharedServe:
        with self._lock:
            serve = self._by_command.get(command)
            if serve is not None and serve.usable:
                return serve
            for other in self._by_command.values():
                other.retired = True
                if not other.sessions:
                    other.close("replaced")
            serve = SharedServe(transport, command, heartbeat, self._log)
            self._by_command = {c: s for c, s in self._by_command.items() if not s.dead}
            self._by_command[command] = serve
            return serve


def carry(serve: SharedServe, client: socket.socket) -> None:
    """client's session of serve, until client hangs up: `A`, then its stdin bytes to the session."""
    sid = serve.join(client)
    try:
        frames.send_json(client, b"A", {"ok": True, "session": sid})
        serve.open(sid)
        while True:
            frame = frames.recv(client)
            if frame is None or frame[0] == b"W":
                break
            if frame[0] == b"I":
                serve.send(sid, frame[1])
    except (OSError, EOFError, frames.FrameError):
        pass
    finally:
        serve.leave(sid)
