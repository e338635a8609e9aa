"""One CLI invocation's connections and store: agents are connected on first use and closed at exit."""

from __future__ import annotations

from typing import Any

from . import paths
from .errors import EXIT_HOST, CliError
from .remote.client import AgentClient, AgentError
from .remote.transport import LocalTransport, Transport, TransportError
from .store import Store

LOCAL = "local"


def transport_for(host: str) -> Transport:
    if host == LOCAL:
        return LocalTransport(paths.ensure_private(paths.local_agent_dir()))
    raise CliError(f"unknown host {host!r} (known: {LOCAL})", EXIT_HOST)


class Session:
    def __init__(self) -> None:
        self._store: Store | None = None
        self._clients: dict[str, AgentClient] = {}

    @property
    def store(self) -> Store:
        if self._store is None:
            paths.ensure_private(paths.data_dir())
            self._store = Store(paths.state_db())
        return self._store

    def hosts(self) -> list[str]:
        return [LOCAL]

    def client(self, host: str) -> AgentClient:
        client = self._clients.get(host)
        if client is not None and client.connected:
            return client
        client = AgentClient(transport_for(host))
        try:
            client.connect()
        except (AgentError, TransportError) as exc:
            raise CliError(f"host {host} unreachable: {exc}", EXIT_HOST) from None
        self._clients[host] = client
        return client

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        try:
            return self.client(host).request(op, timeout=timeout, **args)
        except AgentError as exc:
            raise CliError(f"{host}: {exc}") from None

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._store is not None:
            self._store.close()
