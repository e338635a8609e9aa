"""`serve --sessions`: one serve for many clients, so a warm connection's commands start none.

A client's warm master (tui/remote/warm_master.py) keeps this one process running on the host and
carries every later command's agent conversation over it as a session. Each session is what one
plain `serve` would be to its client: its own hello, its own request ids, its own tails, follows and
listening ports (closed when the session ends); the job table, NVML, the CPU meter and the GPU ring
are shared. Framing, both ways (PROTOCOL.md "Warm connections"):

    O <sid>\\n                 open a session (serve answers with its hello on it)
    D <sid> <len>\\n<len bytes>  a session's bytes: request lines in, answers and pushes out
    C <sid>\\n                 the session ended (its subscriptions are cancelled)
    P <sid>\\n, R <sid>\\n       pause / resume a session's output (its command reads slowly)
    K\\n                       keepalive (master → serve) / heartbeat (serve → master)

serve's first line is `S gpudeck-sessions <pid>`: what a login shell printed before it is skipped.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Tuple, cast

from .. import PROTOCOL, VERSION
from ..probes.network import Listeners
from .adopting import adopt_lost_jobs
from .outputhub import OutputHub
from .serve import MAX_REQUEST_BYTES, SILENT_BEATS, BadRequest, Server, parse_request
from .sessionwriter import START, Mux, SessionWriter
from .tailhub import TailHub


class Session:
    """One client's view of the shared Server: ops run with it as `self`, so what a connection owns
    (tails, follows, listening ports, where answers go) is its own, and everything else is shared."""

    def __init__(self, server: Server, out: SessionWriter) -> None:
        self._server = server
        self.out = out
        self._hub: Optional[TailHub] = None
        self._outputs: Optional[OutputHub] = None
        self._listeners: Optional[Listeners] = None
        self.pending = bytearray()  # a request line not yet whole

    # Made on first use: a `ps` session needs none of their threads.
    @property
    def hub(self) -> TailHub:
        if self._hub is None:
            self._hub = TailHub(self.out)
        return self._hub

    @property
    def outputs(self) -> OutputHub:
        if self._outputs is None:
            self._outputs = OutputHub(self.out)
        return self._outputs

    @property
    def listeners(self) -> Listeners:
        if self._listeners is None:
            self._listeners = Listeners()
        return self._listeners

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    def handle(self, req: Dict[str, Any]) -> None:
        Server.handle(cast(Server, self), req)

    def close(self) -> None:
        self.out.mux.close(self.out)
        if self._hub is not None:
            self._hub.close()
        if self._outputs is not None:
            self._outputs.close()
        if self._listeners is not None:
            self._listeners.close_all()


def serve_sessions(
    root: Path,
    stdin: Optional[IO[bytes]] = None,
    stdout: Optional[IO[bytes]] = None,
    heartbeat: float = 0.0,
    on_silence: Optional[Callable[[], None]] = None,
) -> int:
    """Serve sessions until stdin ends (the master, or its SSH connection, went away)."""
    stdin = stdin or sys.stdin.buffer
    mux = Mux(stdout or sys.stdout.buffer)
    server = Server(root, SessionWriter(mux, 0))  # session 0's lines are the master's: dropped
    server.gpu_ring.start()
    sessions: Dict[int, Session] = {}
    # Threads are made as requests need them: room for every session's slow ops (a stop waiting out
    # its grace) without one command queueing behind another's, as with a serve each.
    pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="op")
    last_input = [time.monotonic()]
    done = threading.Event()
    if heartbeat > 0:
        threading.Thread(
            target=_beat,
            args=(mux, sessions, heartbeat, last_input, done, on_silence or _exit_now),
            name="heartbeat",
            daemon=True,
        ).start()
    mux.write(b"%s %d\n" % (START, os.getpid()))
    hello = {"gpudeck": "agent", "version": VERSION, "protocol": PROTOCOL, "pid": os.getpid()}
    try:
        while True:
            head = stdin.readline(64)
            last_input[0] = time.monotonic()
            if not head:
                break
            kind, numbers = _frame_head(head)
            if kind == b"D" and len(numbers) == 2:
                data = stdin.read(numbers[1])
                session = sessions.get(numbers[0])
                if session is not None:
                    _take(session, data, pool)
            elif kind == b"O" and len(numbers) == 1:
                sid = numbers[0]
                session = sessions[sid] = Session(server, SessionWriter(mux, sid))
                session.out.send(dict(hello, session=sid))
                # As each plain serve's start does: jobs lost since are adopted (none while a keeper runs).
                threading.Thread(target=adopt_lost_jobs, args=(root,), name="adopt", daemon=True).start()
            elif kind in (b"P", b"R") and len(numbers) == 1:
                paused = sessions.get(numbers[0])
                if paused is not None:
                    (paused.out.flowing.clear if kind == b"P" else paused.out.flowing.set)()
            elif kind == b"C" and len(numbers) == 1:
                ended = sessions.pop(numbers[0], None)
                if ended is not None:
                    ended.close()
            elif kind != b"K":
                break  # out of step: the master is not ours; end rather than guess
    finally:
        done.set()
        for session in list(sessions.values()):
            session.close()
        server.gpu_ring.stop()
        pool.shutdown(wait=False)
    return 0


def _frame_head(head: bytes) -> Tuple[bytes, List[int]]:
    """A frame's kind and numbers; an unknown kind for a line that is not a frame head."""
    parts = head.split()
    try:
        return (parts[0] if parts else b"?"), [int(p) for p in parts[1:]]
    except ValueError:
        return b"?", []


def _take(session: Session, data: bytes, pool: ThreadPoolExecutor) -> None:
    """A session's bytes: each whole request line to the pool, as plain serve does."""
    session.pending += data
    while True:
        end = session.pending.find(b"\n")
        if end < 0:
            if len(session.pending) > MAX_REQUEST_BYTES:
                del session.pending[:]
                too_long = "request line over %d bytes" % MAX_REQUEST_BYTES
                session.out.send({"id": None, "ok": False, "error": too_long})
            return
        raw = bytes(session.pending[: end + 1])
        del session.pending[: end + 1]
        if not raw.strip():
            continue
        try:
            req = parse_request(raw)
        except BadRequest as exc:
            session.out.send({"id": None, "ok": False, "error": str(exc)})
            continue
        pool.submit(session.handle, req)


def _beat(
    mux: Mux,
    sessions: Dict[int, Session],
    every: float,
    last_input: List[float],
    done: threading.Event,
    on_silence: Callable[[], None],
) -> None:
    """Each session's heartbeat push (its client's silence limit), the master's `K`, and the exit
    of a serve whose master fell silent (a cut without a FIN)."""
    while not done.wait(every):
        silent = time.monotonic() - last_input[0] > SILENT_BEATS * every
        if silent or not mux.write(b"K\n"):
            on_silence()
            return
        beat = {"push": "heartbeat", "t": time.time()}
        for session in tuple(sessions.copy().values()):  # the reading thread adds and removes
            session.out.offer(beat)  # not to a paused one: its command is not reading anyway


def _exit_now() -> None:
    os._exit(0)
