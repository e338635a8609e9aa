"""An AgentClient that survives its connection: reconnect with backoff, resume every tail from its seq.

The wrapper owns what must outlive one connection: the followed (job, node) pairs, the last seq
delivered for each, and the event queue consumers read. After a break it reconnects (backoff from
`initial` doubling to `maximum`), re-tails each followed pair from its last seq, and drops anything
at or below it, so consumers see every event exactly once whatever the number of cuts. Requests that
are safe to repeat wait for the next connection instead of failing.

Output follows (`follow`) work the same way by byte offset: the wrapper keeps the offset of the
next byte owed per (job, node), re-follows from it after a break, cuts any overlap off a chunk and
drops a chunk past it (a stale subscription's), so every byte reaches the sink once, in order.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ..exactly_once import continues, fresh, owed_output
from .agent_stream import AgentStream
from .backoff import Backoff
from .client import AgentClient, AgentError, ConnectionLost, EventHandler, RequestTimeout, lines_after
from .hostkey_errors import HostKeyError
from .transport import ConnectionCut, Transport, TransportError

# Ops that give the same outcome when sent twice (a stop of a stopped job answers its final state).
REPEATABLE = frozenset(
    {"hello", "gpus", "jobs", "tail", "untail", "logs", "follow", "unfollow", "ping", "stop", "kill"}
)
StatusHandler = Callable[[str, str], None]  # (host, one line: what happened)
# (job, node, bytes, None) for output, then (job, node, None, end) once: end is the `output_end`
# push (state, exit_code, signal; `error` set when the job can no longer be followed).
OutputSink = Callable[[str, str, bytes | None, dict[str, Any] | None], None]
# Chunks (at most 64 KiB each) waiting for a slow consumer; when full, the reader thread waits,
# the pipe or SSH window fills, and serve's write blocks: memory stays bounded end to end.
OUTPUT_QUEUE = 64

__all__ = ["OutputSink", "ReconnectingClient", "StatusHandler", "owed_output"]


def _seq(record: dict[str, Any]) -> int:
    return int(record["seq"])


class ReconnectingClient:
    def __init__(
        self,
        host: str,
        make_transport: Callable[[], Transport],
        *,
        backoff_initial: float = 0.5,
        backoff_max: float = 15.0,
        on_status: StatusHandler | None = None,
        on_events: EventHandler | None = None,
        on_output: OutputSink | None = None,
    ) -> None:
        self.host = host
        self._make_transport = make_transport
        self.backoff_initial, self.backoff_max = backoff_initial, backoff_max
        self._on_status = on_status or (lambda host, line: None)
        self.events: queue.Queue[tuple[str, str, list[dict[str, Any]]]] = queue.Queue()
        self._sink: EventHandler = on_events or (
            lambda job, node, recs, after=None: self.events.put((job, node, recs))
        )
        self.last_seq: dict[tuple[str, str], int] = {}
        self.followed: set[tuple[str, str]] = set()
        self.as_text: set[tuple[str, str]] = set()  # followed pairs whose records come as journal text
        # (job, node, last seq, journal lines), exactly once and in order like `events`.
        self.journals: queue.Queue[tuple[str, str, int, bytes]] = queue.Queue()
        # Tails the agent refused to resume after a reconnect (e.g. the job was removed meanwhile),
        # with its one-line reason: they are no longer followed; a consumer says so and ends.
        self.dropped: dict[tuple[str, str], str] = {}
        self.outputs: queue.Queue[tuple[str, str, bytes | None, dict[str, Any] | None]] = queue.Queue(
            OUTPUT_QUEUE
        )
        self._output_sink = on_output or self._queue_output
        self.output_offset: dict[tuple[str, str], int] = {}
        self.output_followed: set[tuple[str, str]] = set()
        self.reconnects = 0
        self.last_error: str | None = None
        self.hello_marker: dict[str, Any] = {}
        self._client: AgentClient | None = None
        self._lock = threading.Lock()
        self._deliver_lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closed = threading.Event()
        self._watcher: threading.Thread | None = None

    # -- connection ------------------------------------------------------------------------------

    def connect(self, timeout: float = 30.0, retry_cuts: bool = False) -> dict[str, Any]:
        """The first connection: failures raise (a host that is down now is the caller's news).
        retry_cuts (a follower): a connection that was up and broke while the agent started (a
        ConnectionCut, or the agent's channel lost before its hello) is retried like any later cut."""
        try:
            client = self._open(timeout)
        except (ConnectionCut, ConnectionLost) as exc:
            if not retry_cuts:
                raise
            self.last_error = str(exc)
            reopened = self._reconnect(str(exc))
            if reopened is None:
                raise ConnectionLost(f"{self.host}: {self.last_error}") from None
            client = reopened
        with self._lock:
            self._client = client
        self._watcher = threading.Thread(target=self._watch, name=f"reconnect-{self.host}", daemon=True)
        self._watcher.start()
        return self.hello_marker

    def _open(self, timeout: float) -> AgentClient:
        client = AgentClient(
            self._make_transport(),
            on_events=self._deliver,
            on_output=self._deliver_output,
            on_journal=self._deliver_journal,
            on_tail_end=self._tail_ended,
        )
        self.hello_marker = client.connect(timeout)
        return client

    @property
    def connected(self) -> bool:
        """False only once closed for good; a connection being re-made still counts."""
        return not self._closed.is_set()

    @property
    def online(self) -> bool:
        with self._lock:
            return self._client is not None and self._client.connected

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            client, self._client = self._client, None
            self._changed.notify_all()
        if client is not None:
            client.close()

    def __enter__(self) -> ReconnectingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _watch(self) -> None:
        while not self._closed.is_set():
            with self._lock:
                client = self._client
            if client is None:
                return
            client.wait_closed()
            if self._closed.is_set():
                return
            reason = client.closed_reason or "connection closed"
            client.close()
            with self._lock:
                self._client = None
            self.last_error = reason
            new = self._reconnect(reason)
            if new is None:
                return
            with self._lock:
                self._client = new
                self.reconnects += 1
                self._changed.notify_all()

    def _reconnect(self, reason: str) -> AgentClient | None:
        backoff = Backoff(first=self.backoff_initial, cap=self.backoff_max)
        delay = backoff.failed()
        self._on_status(self.host, f"connection lost: {reason}; reconnecting")
        while not self._closed.wait(delay):
            try:
                client = self._open(timeout=max(10.0, delay * 2))
            except HostKeyError as exc:  # a changed key mid-session: never retry into that
                self.last_error = str(exc)
                self._on_status(self.host, f"giving up: {exc}")
                self.close()
                return None
            except (AgentError, TransportError, OSError) as exc:
                self.last_error = str(exc)
                delay = backoff.failed()
                self._on_status(self.host, f"reconnect failed: {exc}; next try in {delay:.1f} s")
                continue
            # Said before resuming: a follower may get the job's end from the re-follow and exit at
            # once, and "reconnected" must not lose that race.
            self._on_status(self.host, "reconnected")
            try:
                self._retail(client)
                self._refollow(client)
            except AgentError as exc:  # broke again while resuming: start over
                client.close()
                self.last_error = str(exc)
                self._on_status(self.host, f"connection lost again while resuming: {exc}; reconnecting")
                continue
            return client
        return None

    def _current(self, deadline: float) -> AgentClient:
        with self._lock:
            while self._client is None or not self._client.connected:
                left = deadline - time.monotonic()
                if self._closed.is_set():
                    raise ConnectionLost(f"{self.host}: {self.last_error or 'closed'}")
                if left <= 0:
                    raise RequestTimeout(f"{self.host}: not connected ({self.last_error or 'reconnecting'})")
                self._changed.wait(min(left, 0.2))
            return self._client

    # -- requests --------------------------------------------------------------------------------

    def open_stream(self, argv: list[str], timeout: float = 30.0) -> AgentStream:
        return self._current(time.monotonic() + timeout).open_stream(argv)

    def request(self, op: str, timeout: float = 30.0, **args: Any) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            client = self._current(deadline)
            try:
                return client.request(op, timeout=max(0.1, deadline - time.monotonic()), **args)
            except ConnectionLost:
                if op not in REPEATABLE or self._closed.is_set():
                    raise
                client.wait_closed(1.0)  # let the watcher see it before we look again

    def tail(
        self, job: str, node: str, since_seq: int | None = None, timeout: float = 30.0, text: bool = False
    ) -> int:
        """Follow (job, node) from since_seq (default: the last seq delivered); returns the seq now.
        text: records arrive on `journals` as journal text instead of on `events` decoded."""
        key = (job, node)
        with self._lock:
            if since_seq is not None:
                self.last_seq[key] = since_seq
            since = self.last_seq.setdefault(key, 0)
            self.followed.add(key)
            (self.as_text.add if text else self.as_text.discard)(key)
        args: dict[str, Any] = {"text": True} if text else {}
        return int(
            self.request("tail", timeout=timeout, job=job, node=node, since_seq=since, **args)["last_seq"]
        )

    def untail(self, job: str, node: str) -> None:
        with self._lock:
            self.followed.discard((job, node))
            self.as_text.discard((job, node))
        self.request("untail", job=job, node=node)

    def follow(self, job: str, node: str, offset: int | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """Push (job, node)'s output from byte offset (default: the next byte owed) to the sink."""
        key = (job, node)
        with self._lock:
            if offset is not None:
                self.output_offset[key] = offset
            start = self.output_offset.setdefault(key, 0)
            self.output_followed.add(key)
        try:
            return dict(self.request("follow", timeout=timeout, job=job, node=node, offset=start))
        except AgentError:
            with self._lock:
                self.output_followed.discard(key)
            raise

    def set_output_sink(self, sink: OutputSink | None) -> None:
        """Where follows' output goes from now on (None: the `outputs` queue). The sink runs on the
        client's reading thread (paramiko's transport thread over SSH), in order, so one that writes
        at once saves a thread handoff per chunk (`logs -f`); while it blocks, nothing more is read
        from the agent: the same backpressure as a full queue (and not silence: see push_pipe)."""
        self._output_sink = sink or self._queue_output

    def _queue_output(self, job: str, node: str, data: bytes | None, end: dict[str, Any] | None) -> None:
        self.outputs.put((job, node, data, end))

    def unfollow(self, job: str, node: str) -> None:
        with self._lock:
            self.output_followed.discard((job, node))
        self.request("unfollow", job=job, node=node)

    def _tail_ended(self, job: str, node: str, why: str) -> None:
        """The agent ended a tail (its journal is gone): it is not re-tailed, and readers learn why."""
        with self._lock:
            self.followed.discard((job, node))
            self.dropped[(job, node)] = why

    def _retail(self, client: AgentClient) -> None:
        with self._lock:
            tails = sorted((key, self.last_seq.get(key, 0), key in self.as_text) for key in self.followed)
        for (job, node), since, text in tails:
            try:
                client.tail(job, node, since_seq=since, text=text)
            except (ConnectionLost, RequestTimeout):
                raise
            except AgentError as exc:  # the agent's answer: asking again would loop for ever
                with self._lock:
                    self.followed.discard((job, node))
                    self.dropped[(job, node)] = str(exc)

    def _refollow(self, client: AgentClient) -> None:
        with self._lock:
            follows = sorted((key, self.output_offset.get(key, 0)) for key in self.output_followed)
        for (job, node), offset in follows:
            try:
                client.request("follow", job=job, node=node, offset=offset)
            except (ConnectionLost, RequestTimeout):
                raise
            except (
                AgentError
            ) as exc:  # the agent's answer (e.g. removed meanwhile): it cannot be followed now
                with self._lock:
                    self.output_followed.discard((job, node))
                self._output_sink(
                    job,
                    node,
                    None,
                    {
                        "push": "output_end",
                        "job": job,
                        "node": node,
                        "offset": offset,
                        "state": None,
                        "exit_code": None,
                        "signal": None,
                        "error": str(exc),
                    },
                )

    def _deliver_output(self, obj: dict[str, Any]) -> None:
        # On a client's reader thread, like _deliver: old and new connections never interleave.
        job, node, offset = obj.get("job"), obj.get("node"), obj.get("offset")
        if not (
            isinstance(job, str)
            and isinstance(node, str)
            and isinstance(offset, int)
            and not isinstance(offset, bool)
        ):
            return
        key = (job, node)
        with self._deliver_lock:
            with self._lock:  # one pass: check, take, move the owed byte (a chunk of logs -f is hot)
                if key not in self.output_followed:
                    return
                owed = self.output_offset.get(key, 0)
                end = obj.get("push") == "output_end"
                if end:
                    if offset != owed:
                        return  # a stale subscription's end: bytes are still owed
                    self.output_followed.discard(key)
                else:
                    taken = owed_output(obj, offset, owed)
                    if taken is None:
                        return
                    data, self.output_offset[key] = taken
            if end:
                self._output_sink(job, node, None, obj)
            else:
                self._output_sink(job, node, data, None)

    def _deliver(self, job: str, node: str, records: list[dict[str, Any]], after: int | None = None) -> None:
        # Called on a client's reader thread. One lock over check and hand-off, so an old
        # connection's late batch can neither interleave with nor repeat the new one's.
        with self._deliver_lock:
            with self._lock:
                if (job, node) not in self.followed:
                    return
                last = self.last_seq.get((job, node), 0)
            if after is not None and after <= last:  # the agent vouches: what is missing is gone (a cut)
                new = sorted((r for r in records if _seq(r) > last), key=_seq)
            else:
                new = fresh(records, last, _seq)
            if not new:
                return  # nothing new, or a gap from a stale subscription: the re-tail resends it
            with self._lock:
                self.last_seq[(job, node)] = new[-1]["seq"]
            self._sink(job, node, new)

    def _deliver_journal(self, job: str, node: str, first: int, last: int, data: bytes) -> None:
        # As _deliver, for journal text: the client already cut what it had seen on its connection.
        with self._deliver_lock:
            with self._lock:
                if (job, node) not in self.followed:
                    return
                seen = self.last_seq.get((job, node), 0)
            if last <= seen:
                return
            if not continues(first, seen):
                return  # a gap from a stale subscription: the re-tail resends it
            if first <= seen:
                data = lines_after(data, seen)
            with self._lock:
                self.last_seq[(job, node)] = last
            self.journals.put((job, node, last, data))
