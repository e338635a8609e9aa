"""Ports of jobs' nodes forwarded here from the TUI (`F`): each a tui.remote.forward.Forward
accepting in its own thread, over a connection of its own to the node's host, open until closed
(`F` then `x`), until its job ends (nothing listens there any more) or until the app quits.
Opening one blocks (SSH): call `open_port` from a worker."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from ..hosts_file import LOCAL
from ..remote.forward import Forward, listen
from ..settings import Settings


@dataclass
class OpenPort:
    job_id: str
    node: str
    host: str
    remote: int
    url: str
    forward: Forward | None = None  # None: the job runs here, its port is local already
    thread: threading.Thread | None = field(default=None, repr=False)

    def close(self) -> None:
        if self.forward is not None:
            self.forward.close()


class PortForwards:
    def __init__(self, settings: Settings | None) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._open: dict[str, list[OpenPort]] = {}

    def of_job(self, job_id: str) -> list[OpenPort]:
        with self._lock:
            return list(self._open.get(job_id, ()))

    def open_port(self, job_id: str, node: str, host: str, remote: int, local: int) -> OpenPort:
        """Listen here and forward to the node's `remote` port (blocking: SSH connects first)."""
        from ..session import ssh_connection, ssh_transport_for

        if host == LOCAL:
            port = OpenPort(job_id, node, host, remote, f"http://127.0.0.1:{remote}")
        else:
            sock = listen(local)
            try:
                first = ssh_connection(host, self.settings)
            except BaseException:
                sock.close()
                raise
            settings = self.settings
            fwd = Forward(lambda: ssh_transport_for(host, config=settings).connect(), remote, sock, first)
            thread = threading.Thread(target=fwd.serve, name=f"forward-{host}-{remote}", daemon=True)
            thread.start()
            url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            port = OpenPort(job_id, node, host, remote, url, fwd, thread)
        with self._lock:
            self._open.setdefault(job_id, []).append(port)
        return port

    def job_ids(self) -> list[str]:
        """The jobs with a forward open."""
        with self._lock:
            return list(self._open)

    def close_job(self, job_id: str) -> int:
        with self._lock:
            ports = self._open.pop(job_id, [])
        for port in ports:
            port.close()
        return len(ports)

    def close_all(self) -> None:
        with self._lock:
            ports = [p for ps in self._open.values() for p in ps]
            self._open.clear()
        for port in ports:
            port.close()


def forwards_of(app: Any) -> PortForwards:
    """The app's forwards, made on first use (kept on the app: they outlive the screens)."""
    forwards = getattr(app, "port_forwards", None)
    if not isinstance(forwards, PortForwards):
        forwards = PortForwards(getattr(app, "settings", None))
        app.port_forwards = forwards
    return forwards
