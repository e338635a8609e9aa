"""One CLI invocation's connections and store: agents are connected on first use and closed at exit."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import paths
from .errors import EXIT_ERROR, EXIT_HOST, EXIT_HOSTKEY, EXIT_USAGE, GpudeckError
from .hosts_file import LOCAL, HostEntry, HostsFileError, load_hosts
from .printable import warn
from .remote.agent_stream import AgentStream
from .remote.client import AgentError
from .remote.hostkey_errors import Confirm, HostKeyChanged, HostKeyError, HostKeyUnknown, fingerprint
from .remote.reconnect import ReconnectingClient, StatusHandler
from .remote.recording import Recorder
from .remote.replay_refusal import READ_ONLY
from .remote.transport import LocalTransport, Transport, TransportError
from .settings import Settings, SettingsError
from .settings import load as load_settings

if TYPE_CHECKING:
    from .remote.replay import Replay
    from .remote.ssh_connect import Connection
    from .remote.ssh_transport import SshTransport
    from .store import Store

__all__ = ["LOCAL", "Session", "host_key_error", "ssh_transport_for", "transport_for"]

# `gpudeck --record FILE` / `--replay FILE`, set once by the CLI before any connection: every agent
# pipe of the process (the app's and the CLI verbs') is recorded, or played back from the file.
recorder: Recorder | None = None
replay: Replay | None = None


def print_status(host: str, line: str) -> None:
    """Reconnect news for a following CLI command: on stderr, so stdout stays the job's bytes."""
    warn(f"gpudeck: {host}: {line}")


def host_entries() -> dict[str, HostEntry]:
    try:
        return load_hosts()
    except HostsFileError as exc:
        raise GpudeckError(str(exc), exc.code) from None


def settings() -> Settings:
    """config.toml's settings; a file that cannot be used is the command's one-line error."""
    try:
        return load_settings()
    except SettingsError as exc:  # a value of yours, as a bad option value is: usage
        raise GpudeckError(str(exc), EXIT_USAGE) from None


def transport_for(
    host: str,
    confirm: Confirm | None = None,
    ask_passphrase: Callable[[str], str | None] | None = None,
    config: Settings | None = None,
) -> Transport:
    """The pipe to a host's agent. confirm: asked about an unknown host key (None refuses it);
    ask_passphrase: asked for an encrypted key's passphrase when ssh-agent has no key (None: never);
    config: the settings already read (default: read config.toml now)."""
    if replay is not None:
        if host not in replay.hosts:
            raise GpudeckError(
                f"host {host!r} is not in the recording (it has: {', '.join(replay.hosts)})", EXIT_HOST
            )
        return replay.transport(host)
    transport = _transport(host, confirm, ask_passphrase, config)
    return recorder.wrap(transport) if recorder is not None else transport


def _transport(
    host: str,
    confirm: Confirm | None,
    ask_passphrase: Callable[[str], str | None] | None,
    config: Settings | None,
) -> Transport:
    if host == LOCAL:
        return LocalTransport(paths.ensure_private(paths.local_agent_dir()))
    entry = host_entries().get(host)
    if entry is None:
        return ssh_transport_for(host, confirm, ask_passphrase, config)  # its error, in its words
    from .remote.warm_fast import WarmFirstTransport  # a warm host's agent without paramiko

    return WarmFirstTransport(entry, (config or settings()).ssh, confirm, ask_passphrase)


def ssh_transport_for(
    host: str,
    confirm: Confirm | None = None,
    ask_passphrase: Callable[[str], str | None] | None = None,
    config: Settings | None = None,
) -> SshTransport:
    """A hosts.toml host's SSH transport as it is: what `hosts trust` and a launched instance's key
    check connect() (authentication only: no agent, so no line to record or replay)."""
    if replay is not None:
        raise GpudeckError(READ_ONLY.format(op=f"SSH to {host}"), EXIT_USAGE)
    entry = host_entries().get(host)
    if entry is None:
        raise GpudeckError(
            f"no such host {host!r} (known: {', '.join(host_entries())}; add one: gpudeck hosts add)",
            EXIT_USAGE,
        )
    from .remote.ssh_transport import SshTransport  # paramiko only when a remote host is used

    return SshTransport(entry, (config or settings()).ssh, confirm, ask_passphrase)


def ssh_connection(host: str, config: Settings | None = None) -> Connection:
    """A hosts.toml host's SSH connection, authenticated, no agent (a forward, a shell); a refused key
    or a host down is the command's one line, with its exit code."""
    try:
        return ssh_transport_for(host, config=config).connect()
    except HostKeyError as exc:
        raise host_key_error(host, exc) from None
    except TransportError as exc:
        raise GpudeckError(f"host {host} unreachable: {exc}", EXIT_HOST) from None


def host_key_error(host: str, exc: HostKeyError, how_to_trust: str | None = None) -> GpudeckError:
    """The one line for a refused key, with its own exit code (scripts tell it from 'host down').
    how_to_trust: what to run to trust an unknown key (default `gpudeck hosts trust HOST`)."""
    if isinstance(exc, HostKeyUnknown):
        # the name known_hosts would hold ([host]:port, a jump host's) and why a certificate did not do
        said = f"host {host}: unknown host key for {exc.name} ({exc.key.get_name()} {fingerprint(exc.key)}){exc.note}"
        if exc.strict:
            return GpudeckError(
                f"{said}, and its StrictHostKeyChecking is yes: gpudeck never adds it; check it "
                f"and add it to ~/.ssh/known_hosts yourself",
                EXIT_HOSTKEY,
            )
        return GpudeckError(
            f"{said}; check it and run {how_to_trust or f'`gpudeck hosts trust {host}`'}", EXIT_HOSTKEY
        )
    if isinstance(exc, HostKeyChanged):
        return GpudeckError(f"host {host}: {exc}", EXIT_HOSTKEY)
    return GpudeckError(f"host {host}: {exc}", EXIT_HOSTKEY)


# Agent answers that refuse a value the user gave (a spec field: a workdir missing on that host, a
# pid not alive there) or an action a replay cannot take: bad usage, as the same refusal made here is.
_USAGE_REFUSALS = ("spec.", READ_ONLY.split("{op}")[0])


def _code_of(exc: AgentError) -> int:
    return EXIT_USAGE if str(exc).startswith(_USAGE_REFUSALS) else EXIT_ERROR


class Session:
    def __init__(self, on_status: StatusHandler | None = None) -> None:
        self._store: Store | None = None
        self._settings: Settings | None = None
        self._clients: dict[str, ReconnectingClient] = {}
        self._lock = threading.Lock()
        self._connecting: dict[str, threading.Lock] = {}  # one connect per host, even from threads
        self.on_status = on_status  # reconnect news (the CLI prints it on stderr)
        self.retry_first_cut = False  # a follower (logs -f): a cut in the first connection is retried too

    @property
    def job_index(self) -> Store | None:
        """state.db for finding where a job is, when there is one to read: never made (or rebuilt
        from every host) just for that, and none while a recording plays."""
        if replay is not None or (self._store is None and not paths.state_db().exists()):
            return None
        return self.store

    @property
    def store(self) -> Store:
        if self._store is None:
            held: list[str] = []  # a corrupt file's note, said together with the rebuild's
            opening = True

            def warn(line: str) -> None:
                held.append(line) if opening else self.notice(line)

            import sqlite3  # here: a verb that never opens state.db loads neither

            from .store import Store

            try:
                paths.ensure_private(paths.data_dir())
                self._store = Store(paths.state_db(), warn=warn)
            except (OSError, sqlite3.Error) as exc:  # e.g. a full disk: one line naming the file
                raise GpudeckError(
                    f"{paths.state_db()}: {exc} ({paths.unwritable_hint(paths.data_dir(), paths.state_db())})"
                ) from None
            finally:
                opening = False
            added = 0
            if self._store.fresh:
                self._store.fresh = False
                from .actions.reindex import rebuild_index  # only when state.db was missing or corrupt

                added = rebuild_index(self, self._store)
            rebuilt = f"job index rebuilt from the hosts' journals ({added} jobs)" if added else ""
            if held:
                self.notice(f"{held[0]}; {rebuilt}" if rebuilt else held[0])  # one line, said once
            elif rebuilt:
                self.notice(f"{paths.state_db()}: {rebuilt}")
        return self._store

    @property
    def settings(self) -> Settings:
        """config.toml, read once per session."""
        if self._settings is None:
            self._settings = settings()
        return self._settings

    def notice(self, line: str) -> None:
        """A line for the user that is not an error: on stderr, so stdout stays the command's answer."""
        warn(f"gpudeck: {line}")

    def hosts(self) -> list[str]:
        return list(replay.hosts) if replay is not None else list(host_entries())

    def client(self, host: str) -> ReconnectingClient:
        with self._lock:
            connecting = self._connecting.setdefault(host, threading.Lock())
        with connecting:  # a multi-node stop asks one host from several threads: one client for all
            return self._client(host)

    def _client(self, host: str) -> ReconnectingClient:
        with self._lock:
            client = self._clients.get(host)
        if client is not None and client.connected:
            return client
        config = self.settings
        transport_for(host, config=config)  # unknown host names fail here, before any thread starts
        client = ReconnectingClient(
            host,
            lambda: transport_for(host, config=config),
            backoff_initial=config.ssh.backoff_initial,
            backoff_max=config.ssh.backoff_max,
            on_status=self.on_status,
        )
        try:
            client.connect(timeout=max(30.0, config.ssh.connect_timeout * 2), retry_cuts=self.retry_first_cut)
        except HostKeyError as exc:
            raise host_key_error(host, exc) from None
        except (AgentError, TransportError) as exc:
            raise GpudeckError(f"host {host} unreachable: {exc}", EXIT_HOST) from None
        with self._lock:
            self._clients[host] = client
        self._metrics_listen(host, client)
        return client

    def _metrics_listen(self, host: str, client: ReconnectingClient) -> None:
        """hosts.toml `metrics_listen = "127.0.0.1:9401"`: the host serves its own /metrics (its agent
        starts the server once; later connections find it serving). A refusal is a warning."""
        entry = host_entries().get(host) if replay is None else None
        listen = entry.extra.get("metrics_listen") if entry is not None else None
        if listen is None:
            return
        try:
            client.request("metrics_listen", listen=str(listen))
        except AgentError as exc:
            warn(f"gpudeck: {host}: metrics_listen: {exc}")

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        if op == "jobs" and host == LOCAL and replay is None and recorder is None:
            return self._local_jobs()
        try:
            return self.client(host).request(op, timeout=timeout, **args)
        except AgentError as exc:
            raise GpudeckError(f"{host}: {exc}", _code_of(exc)) from None

    def stream(self, host: str, argv: list[str]) -> AgentStream:
        try:
            return self.client(host).open_stream(argv)
        except AgentError as exc:
            raise GpudeckError(f"{host}: {exc}", _code_of(exc)) from None

    def _local_jobs(self) -> Any:
        """The local listing without starting the local agent (tui/remote/local_jobs.py)."""
        from remote_agent.storage.files import describe_os_error

        from .remote.local_jobs import local_jobs

        try:
            return local_jobs()
        except OSError as exc:  # as the agent would answer it: the cause, in one line
            raise GpudeckError(f"{LOCAL}: jobs: {describe_os_error(exc)}") from None

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
        if self._store is not None:
            self._store.close()
