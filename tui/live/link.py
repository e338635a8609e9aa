"""One host's connection for the app: an AgentClient plus the blocking requests the app needs.

Every method here blocks (pipe or SSH IO): the app calls them only from thread workers. Results
that feed the fleet model go into the Inbox; the app thread applies them.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from remote_agent.supervision.outputcap import gap_marker

from ..remote.client import AgentClient, AgentError
from ..remote.transport import Transport
from .inbox import Inbox, Update

TransportFactory = Callable[[str], Transport]
POLL_TIMEOUT = 10.0  # a frozen host must not hold a poll worker for long


class LinkDown(Exception):
    """The host is not connected (or the connection broke); the message says why."""


@dataclass
class LogChunk:
    offset: int  # where data starts
    data: bytes
    size: int  # the file's size now
    done: bool  # the job is over: nothing more will be written


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

    # -- connection ------------------------------------------------------------------------------

    def connect(self) -> dict[str, Any]:
        """(Re)connect and say hello; the hello goes to the inbox too."""
        self.close()
        try:
            client = AgentClient(self._transport_for(self.host), on_events=self._on_events)
            client.connect(timeout=20.0)
            hello = client.request("hello", timeout=POLL_TIMEOUT)
        except Exception as exc:  # transports raise their own kinds (SSH, host keys, OS): all mean down
            raise LinkDown(str(exc) or type(exc).__name__) from exc  # __cause__ keeps the kind
        with self._lock:
            self._client = client
            self.tailed = set()  # subscriptions belong to a connection
            self._history_due = True
        self.ever_connected = True
        self.inbox.put(Update("hello", self.host, hello))
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

    def _on_events(self, job: str, node: str, records: list[dict[str, Any]]) -> None:
        # Called on the client's reader thread: hand on, never touch the model here.
        self.inbox.put(Update("events", self.host, records, job, node))

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
        self.inbox.put(Update("jobs", self.host, result.get("jobs") if isinstance(result, dict) else None))

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
        obj = self.request(op, timeout=timeout, **args)
        if isinstance(obj, dict):
            self.inbox.put(Update("jobs", self.host, [obj]))
        return obj

    def logs(self, job: str, node: str, offset: int, limit: int = 1 << 20) -> LogChunk:
        r = self.request("logs", timeout=30.0, job=job, node=node, offset=offset, limit=limit)
        try:
            data = base64.b64decode(r.get("data") or "")
        except ValueError:
            data = b""
        gap = r.get("gap")
        if not data and isinstance(gap, list) and len(gap) == 2 and gap[0] <= offset < gap[1]:
            # The output cap dropped these bytes: a line saying so, ending where the output goes on.
            data = gap_marker(offset, gap[1])
            return LogChunk(gap[1] - len(data), data, int(r.get("size", 0)), bool(r.get("done")))
        return LogChunk(int(r.get("offset", offset)), data, int(r.get("size", 0)), bool(r.get("done")))
