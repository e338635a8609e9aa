"""Talks to one agent: requests with timeouts, pushed journal events with exactly-once delivery.

The read side is one ordered stream of lines: a reader thread of ours pulls them, or a transport
that pushes (SSH) hands them over on its own thread. Callers block only on their own request's
future. Pushes and answers arrive on that one reading thread, in order: handlers must hand them on
(a queue, post_message) and never wait on the connection themselves.
"""

from __future__ import annotations

import itertools
import json
import json.scanner
import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

from remote_agent.storage.records import expand_all, lines_after_seq

from .agent_stream import AgentStream
from .line_stream import LineStream
from .reply import Reply
from .transport import Transport, TransportError


class EventHandler(Protocol):
    """(job, node, records); `after`, when the agent says it: the records account for every seq
    after it, so seqs missing between are gone from the journal (a cut), not owed."""

    def __call__(
        self, job: str, node: str, records: list[dict[str, Any]], after: int | None = None
    ) -> None: ...


OutputHandler = Callable[[dict[str, Any]], None]  # an `output` or `output_end` push, as sent
HELLO_BYTES_MAX = 8 << 20  # a login shell may print before the hello; past this much, it is not our agent
_HELLO_START = b'{"gpudeck"'  # where the hello begins, even after chatter printed without a newline
# (job, node, first_seq, last_seq, lines): a `journal` push, its journal lines as the agent read them.
JournalHandler = Callable[[str, str, int, int, bytes], None]


class AgentError(Exception):
    """The agent answered with an error; the message is its one line."""


class ConnectionLost(AgentError):
    """The pipe closed before an answer came."""


class RequestTimeout(AgentError):
    pass


class AgentClient:
    def __init__(
        self,
        transport: Transport,
        on_events: EventHandler | None = None,
        on_output: OutputHandler | None = None,
        on_journal: JournalHandler | None = None,
        on_tail_end: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self.transport = transport
        self.host = transport.host
        self.hello_marker: dict[str, Any] = {}
        self.last_seq: dict[tuple[str, str], int] = {}
        self.events: queue.Queue[tuple[str, str, list[dict[str, Any]]]] = queue.Queue()
        self._on_events: EventHandler = on_events or (
            lambda job, node, recs, after=None: self.events.put((job, node, recs))
        )
        self.outputs: queue.Queue[dict[str, Any]] = queue.Queue()
        self._on_output = on_output or self.outputs.put
        self.journals: queue.Queue[tuple[str, str, int, bytes]] = queue.Queue()
        self._on_journal = on_journal or self._journal_to_queue
        # (job, node) → why the agent ended its tail (a `tail_end` push: the journal is gone)
        self.dropped: dict[tuple[str, str], str] = {}
        self._on_tail_end = on_tail_end or (lambda job, node, why: self.dropped.__setitem__((job, node), why))
        self._ids = itertools.count(1)
        self._pending: dict[int, Reply[Any]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.closed_reason: str | None = None
        self._reader: threading.Thread | None = None
        self._hello: Reply[dict[str, Any]] = Reply()
        self._greeted = False  # the hello came: a plain flag, read per line
        self._skipped = 0  # bytes a login shell printed before the hello
        self._journal_header: dict[str, Any] = {}
        self._stream = LineStream(self._take_line, self._take_journal_body)

    # -- connection ------------------------------------------------------------------------------

    def connect(self, timeout: float = 20.0) -> dict[str, Any]:
        marker = self._hello
        # A transport that pushes (SSH) hands over each packet on its own thread: no reader thread
        # and no handoff per line; the others are read by a thread of ours.
        if self.transport.push_to(self._stream.feed, self._pushed_end):
            self.transport.open()
        else:
            self.transport.open()
            self._reader = threading.Thread(target=self._read_loop, name=f"agent-{self.host}", daemon=True)
            self._reader.start()
        try:
            self.hello_marker = marker.result(timeout)
        except TimeoutError:
            self.close()
            raise RequestTimeout(f"{self.host}: the agent did not start within {timeout:.0f} s") from None
        return self.hello_marker

    def close(self) -> None:
        self._closed.set()
        self.transport.close()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=5)

    @property
    def connected(self) -> bool:
        return not self._closed.is_set()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until the connection is gone (for a reconnecting wrapper); True if it is."""
        return self._closed.wait(timeout)

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------------

    def open_stream(self, argv: list[str]) -> AgentStream:
        """A byte stream to an agent subcommand on this client's connection (agent_stream.py)."""
        if not self.connected:
            raise ConnectionLost(f"{self.host}: {self.closed_reason or 'not connected'}")
        try:
            return self.transport.open_stream(argv)
        except TransportError as exc:
            raise AgentError(str(exc)) from None

    def request(self, op: str, timeout: float = 30.0, **args: Any) -> Any:
        future = self.submit(op, **args)
        try:
            return future.result(timeout)
        except TimeoutError:
            raise RequestTimeout(f"{self.host}: no answer to {op} within {timeout:.0f} s") from None

    def submit(self, op: str, **args: Any) -> Reply[Any]:
        rid = next(self._ids)
        future: Reply[Any] = Reply()
        with self._lock:
            if self._closed.is_set():
                future.set_exception(
                    ConnectionLost(f"{self.host}: {self.closed_reason or 'connection closed'}")
                )
                return future
            self._pending[rid] = future
        line = json.dumps({"id": rid, "op": op, **args}, allow_nan=False) + "\n"
        try:
            self.transport.write(line.encode("utf-8"))
        except TransportError as exc:
            with self._lock:
                self._pending.pop(rid, None)
            future.set_exception(ConnectionLost(f"{self.host}: {exc}"))
        return future

    def tail(self, job: str, node: str, since_seq: int | None = None, text: bool = False) -> int:
        """Subscribe from since_seq (default: the last seq this client saw); returns the seq now.
        text: the records come as journal text (`journals`, on_journal) instead of decoded (`events`)."""
        if since_seq is None:
            since_seq = self.last_seq.get((job, node), 0)
        with self._lock:
            self.last_seq[(job, node)] = since_seq
        args: dict[str, Any] = {"text": True} if text else {}
        return int(self.request("tail", job=job, node=node, since_seq=since_seq, **args)["last_seq"])

    def untail(self, job: str, node: str) -> None:
        self.request("untail", job=job, node=node)

    # -- the reader thread -----------------------------------------------------------------------

    def _read_loop(self) -> None:
        reason = "the agent closed the connection"
        try:
            while True:
                line = self.transport.readline()
                if not line:
                    if not self._hello.done():
                        reason = "the agent exited before saying hello"
                    break
                size = self._take_line(line)
                if size:
                    data = self.transport.read_lines(size)
                    if len(data) < size:
                        raise TransportError("the connection closed inside a journal push")
                    self._take_journal_body(data)
        except TransportError as exc:  # a transport says why it broke (timeout, cut, agent exit)
            reason = str(exc)
        except Exception as exc:  # the reader must always fail the pending requests
            reason = f"reader failed: {exc}"
        self._ended(reason)

    def _pushed_end(self, reason: str | None) -> None:
        """The pushing transport's stream ended (its watchdog thread says why, once)."""
        if reason is None:
            if not self._hello.done():
                reason = "the agent exited before saying hello"
            elif self._stream.inside:
                reason = "the connection closed inside a journal push"
            else:
                reason = "the agent closed the connection"
        self._ended(reason)

    def _ended(self, reason: str) -> None:
        if not self._hello.done():
            self._hello.set_exception(ConnectionLost(f"{self.host}: {reason}"))
        self._fail_pending(reason)

    def _take_line(self, line: bytes) -> int:
        """One line from the agent, in order; returns the size of the journal body that follows it
        (a `journal` push), else 0. Before the hello, a login shell's chatter is skipped."""
        if not self._greeted:
            obj = hello_in(line)
            if obj is not None:
                self._greeted = True
                self._hello.set_result(obj)
                return 0
            self._skipped += len(line)
            if self._skipped > HELLO_BYTES_MAX:
                raise TransportError(
                    f"no agent hello in the first {self._skipped >> 20} MiB the login shell printed"
                )
            return 0
        obj = decode_object(line)
        if obj is not None and obj.get("push") == "journal":
            size = obj.get("bytes")
            if not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
                raise TransportError("a journal push without its size: the stream is out of step")
            self._journal_header = obj  # its lines follow the header: _take_journal_body, in order
            return size
        if obj is not None:
            self._dispatch(obj)
        return 0

    def _dispatch(self, obj: dict[str, Any]) -> None:
        push = obj.get("push")
        if push == "events":
            self._deliver(obj)
            return
        if push in ("output", "output_end"):
            self._on_output(obj)
            return
        if push == "tail_end":
            job, node, why = obj.get("job"), obj.get("node"), obj.get("error")
            if isinstance(job, str) and isinstance(node, str):
                self._on_tail_end(job, node, str(why or "the agent ended the tail"))
            return
        rid = obj.get("id")
        with self._lock:
            future = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if future is None:
            return  # an answer to a request nobody waits for (timed out), or garbage
        if obj.get("ok"):
            future.set_result(obj.get("result"))
        else:
            future.set_exception(AgentError(str(obj.get("error") or "unknown error")))

    def _deliver(self, obj: dict[str, Any]) -> None:
        job, node, records = obj.get("job"), obj.get("node"), obj.get("events")
        if not (isinstance(job, str) and isinstance(node, str) and isinstance(records, list)):
            return
        records = expand_all(r for r in records if isinstance(r, dict))  # `points` records: their points
        with self._lock:
            last = self.last_seq.get((job, node), 0)
            fresh = [
                r
                for r in records
                if isinstance(r, dict) and isinstance(r.get("seq"), int) and r["seq"] > last
            ]
            if fresh:
                self.last_seq[(job, node)] = fresh[-1]["seq"]
        if fresh:
            after = obj.get("after")
            self._on_events(
                job, node, fresh, after if isinstance(after, int) and not isinstance(after, bool) else None
            )

    def _take_journal_body(self, data: bytes) -> None:
        header = self._journal_header
        job, node, first, last = (
            header.get("job"),
            header.get("node"),
            header.get("first_seq"),
            header.get("last_seq"),
        )
        if not (
            isinstance(job, str)
            and isinstance(node, str)
            and isinstance(first, int)
            and isinstance(last, int)
        ):
            return
        with self._lock:
            seen = self.last_seq.get((job, node), 0)
            if last <= seen:
                return
            self.last_seq[(job, node)] = last
        if first <= seen:
            data = lines_after(data, seen)
            first = seen + 1
        self._on_journal(job, node, first, last, data)

    def _journal_to_queue(self, job: str, node: str, first: int, last: int, data: bytes) -> None:
        self.journals.put((job, node, last, data))

    def _fail_pending(self, reason: str) -> None:
        with self._lock:
            self.closed_reason = reason
            self._closed.set()
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(ConnectionLost(f"{self.host}: {reason}"))


def hello_in(line: str | bytes) -> dict[str, Any] | None:
    """The agent's hello on this line, also when chatter without a newline (motd, a .bashrc's
    printf) came before it on the same line."""
    raw = line.encode() if isinstance(line, str) else line
    start = raw.rfind(_HELLO_START)
    obj = decode_object(raw[start:]) if start >= 0 else None
    return obj if obj is not None and obj.get("gpudeck") == "agent" else None


def decode_object(line: str | bytes) -> dict[str, Any] | None:
    """The JSON object on a protocol line, or None for anything else (a .bashrc's chatter, garbage)."""
    try:
        # The agent's lines start with `{`: json's C scanner at once, skipping json.loads' Python
        # layers (a line of `logs -f` pays each call several times over on a cold CPU).
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        obj, end = _scan_once(text, 0)
        if text[end:].strip():
            raise ValueError("extra data")
    except (ValueError, StopIteration, UnicodeDecodeError):
        try:
            obj = json.loads(line)  # the exact rules (leading space, other encodings)
        except ValueError:
            return None
    return obj if isinstance(obj, dict) else None


_scan_once = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed wants a make_scanner; CPython takes the decoder


def lines_after(data: bytes, seq: int) -> bytes:
    """The journal lines of data with a seq above `seq` (a resent batch overlapping what was seen;
    a `points` line across `seq` is cut to its later points)."""
    kept = lines_after_seq(data.splitlines(), seq)
    return b"".join(line + b"\n" for line in kept)
