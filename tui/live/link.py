"""One host's connection for the app: an AgentClient plus the blocking requests the app needs.

Every method here blocks (pipe or SSH IO): the app calls them only from thread workers. Results
that feed the fleet model go into the Inbox; the app thread applies them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from ..remote.agent_stream import AgentStream
from ..remote.client import AgentClient, AgentError, RequestTimeout
from ..remote.transport import Transport
from .inbox import Inbox, Update
from .output_stream import OutputStream

TransportFactory = Callable[[str], Transport]
POLL_TIMEOUT = 10.0  # a frozen host must not hold a poll worker for long


class LinkDown(Exception):
    """The host is not connected (or the connection broke); the message says why."""


class HostLink:
    def __init__(self, host: str, inbox: Inbox, transport_for: TransportFactory) -> None:
        self.host = host
        self.inbox = inbox
        self._transport_for = transport_for
        self._client: AgentClient | None = None
        self._lock = threading.Lock()
        self.tailed: set[tuple[str, str]] = set()  # (job, node) subscribed on this connection
        self.ever_connected = False
        self._history_due = True  # the first gpus poll of a connection backfills the sparklines
        # Outputs views follow (`follow` pushes), by (job, node); they outlive a connection.
        self.streams: dict[tuple[str, str], OutputStream] = {}

    # -- connection ------------------------------------------------------------------------------

    def connect(self) -> dict[str, Any]:
        """(Re)connect and say hello; the hello goes to the inbox too."""
        self.close()
        try:
            client = AgentClient(
                self._transport_for(self.host), on_events=self._on_events, on_output=self._on_output
            )
            client.connect(timeout=20.0)
            hello: dict[str, Any] = client.request("hello", timeout=POLL_TIMEOUT)
        except Exception as exc:  # transports raise their own kinds (SSH, host keys, OS): all mean down
            raise LinkDown(str(exc) or type(exc).__name__) from exc  # __cause__ keeps the kind
        with self._lock:
            self._client = client
            self.tailed = set()  # subscriptions belong to a connection
            self._history_due = True
        self.ever_connected = True
        self.inbox.put(Update("hello", self.host, hello))
        for stream in list(self.streams.values()):  # each from the next byte it is owed: none twice
            self._start_stream(client, stream)
        return hello

    def close(self, wait: float = 0.0) -> None:
        """Drop the connection. The old client closes on a thread of its own, waited for at most
        `wait` s: closing a pipe whose agent is frozen (SIGSTOP, a hung host) can block for good,
        and that must delay neither a reconnect nor the app's exit."""
        with self._lock:
            client, self._client = self._client, None
            self.tailed = set()
        if client is not None:
            closer = threading.Thread(target=client.close, name=f"close-{self.host}", daemon=True)
            closer.start()
            closer.join(wait)

    @property
    def connected(self) -> bool:
        c = self._client
        return c is not None and c.connected

    def _on_events(
        self, job: str, node: str, records: list[dict[str, Any]], after: int | None = None
    ) -> None:
        # Called on the client's reader thread: hand on, never touch the model here.
        self.inbox.put(Update("events", self.host, records, job, node, after))

    def _on_output(self, obj: dict[str, Any]) -> None:
        # On the client's reader thread, like _on_events: the stream decodes and wakes its view.
        stream = self.streams.get((str(obj.get("job")), str(obj.get("node"))))
        if stream is not None:
            stream.take_push(obj)

    # -- output streams (blocking: from workers) -------------------------------------------------

    def follow_output(self, stream: OutputStream) -> None:
        """Push (job, node)'s output to the stream from now on, and again after every reconnect."""
        self.streams[(stream.job, stream.node)] = stream
        client = self._client
        if client is not None and client.connected:
            self._start_stream(client, stream)

    def unfollow_output(self, stream: OutputStream) -> None:
        if self.streams.get((stream.job, stream.node)) is not stream:
            return  # another view follows it now
        del self.streams[(stream.job, stream.node)]
        client = self._client
        if client is not None and client.connected:
            with contextlib.suppress(AgentError):  # gone already: nothing to stop
                client.request("unfollow", timeout=POLL_TIMEOUT, job=stream.job, node=stream.node)

    def _start_stream(self, client: AgentClient, stream: OutputStream) -> None:
        if stream.end is not None:
            return
        try:
            if stream.started:
                offset = stream.start_at(0)
            else:  # the first time: from tail_bytes before the end
                size = client.request(
                    "logs", timeout=POLL_TIMEOUT, job=stream.job, node=stream.node, offset=0, limit=1
                )
                offset = stream.start_at(int(size.get("size", 0)))
            client.request("follow", timeout=POLL_TIMEOUT, job=stream.job, node=stream.node, offset=offset)
        except RequestTimeout:
            pass  # a slow or frozen agent: the reconnect that follows follows again
        except AgentError as exc:
            if client.connected:  # the agent's answer (e.g. the job was removed): it cannot go on
                stream.fail(str(exc))
            # else: the connection broke; the next connect follows again

    def open_stream(self, argv: list[str]) -> AgentStream:
        client = self._client
        if client is None or not client.connected:
            raise LinkDown(f"{self.host}: not connected")
        return client.open_stream(argv)

    def request(self, op: str, timeout: float = 30.0, **args: Any) -> Any:
        client = self._client
        if client is None or not client.connected:
            reason = client.closed_reason if client is not None else None
            raise LinkDown(f"{self.host}: not connected" + (f" ({reason})" if reason else ""))
        try:
            return client.request(op, timeout=timeout, **args)
        except AgentError as exc:
            if not client.connected:
                raise LinkDown(str(exc)) from None
            raise

    # -- polls -----------------------------------------------------------------------------------

    def poll_gpus(self) -> None:
        # serve keeps the last hour at 1 Hz: a fresh connection draws it instead of an empty line.
        args = {"history_since": 0} if self._history_due else {}
        sample = self.request("gpus", timeout=POLL_TIMEOUT, **args)
        self._history_due = False
        self.inbox.put(Update("gpus", self.host, sample))

    def poll_jobs(self) -> None:
        # warm_series: the agent folds jobs' series ahead, so opening any of them draws at once.
        result = self.request("jobs", timeout=POLL_TIMEOUT, warm_series=True)
        jobs = result.get("jobs") if isinstance(result, dict) else None
        self.inbox.put(Update("listing", self.host, jobs))  # every job the host has: one gone was removed

    def poll_slurm(self) -> None:
        """A Slurm host's partitions and the user's queue (one squeue and one sinfo on the login node)."""
        report = self.request("slurm", timeout=POLL_TIMEOUT)
        self.inbox.put(Update("slurm", self.host, report))

    def tail(self, job: str, node: str, since_seq: int) -> None:
        """Subscribe to (job, node) from since_seq (the fleet's last seq). The app thread adds the
        pair to `tailed` before starting this, so two polls never subscribe it twice."""
        client = self._client
        try:
            if client is None:
                raise LinkDown(f"{self.host}: not connected")
            client.tail(job, node, since_seq)
        except Exception:
            self.tailed.discard((job, node))  # the next jobs poll tries again
            raise

    # -- actions ---------------------------------------------------------------------------------

    def job_request(self, op: str, timeout: float, **args: Any) -> dict[str, Any]:
        """launch/stop/kill/restart: the answer is a job object, which the fleet takes at once."""
        obj: dict[str, Any] = self.request(op, timeout=timeout, **args)
        if isinstance(obj, dict):
            self.inbox.put(Update("jobs", self.host, [obj]))
        return obj
