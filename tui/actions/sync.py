"""Code sync, the core action: a directory's snapshot sent to hosts (the CLI's `sync`, a launch's
`--sync`, a node on a new host). The question `code_have` is one round trip; only when the host
lacks the snapshot does a `receive` stream carry the blobs it lacks."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from remote_agent.spec import Code

from ..errors import GpudeckError
from ..sync.hashcache import HashCache
from ..sync.options import DEFAULT_MAX_FILE_SIZE, SyncOptions, host_sync_settings
from ..sync.push import push
from ..sync.relay import relay
from ..sync.snapshot import Snapshot, recall, take_snapshot
from ..sync.upload import Progress, upload
from .agents import Agents, ByteStream
from .node_spec import host_entry

ProgressFor = Callable[[str, int, int], Progress | None]  # (host, files, bytes) → a progress callback


@dataclass(frozen=True)
class Synced:
    host: str
    snapshot: str
    files: int
    bytes: int
    sent_files: int
    sent_bytes: int
    wire_bytes: int
    seconds: float
    already: bool  # the host had the snapshot: nothing was sent
    source: str | None = None  # relayed from this host (else sent from this machine)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "snapshot": self.snapshot,
            "files": self.files,
            "bytes": self.bytes,
            "sent_files": self.sent_files,
            "sent_bytes": self.sent_bytes,
            "wire_bytes": self.wire_bytes,
            "seconds": round(self.seconds, 3),
            "already": self.already,
        }

    def __str__(self) -> str:
        what = f"{self.host}: snapshot {self.snapshot[:12]} ({self.files} files, {self.bytes / 1e6:.1f} MB)"
        if self.already:
            return f"{what}: already there ({self.seconds:.2f} s)"
        via = f" from {self.source}" if self.source else ""
        return (
            f"{what}: sent{via} {self.sent_files} files, {self.sent_bytes / 1e6:.1f} MB "
            f"({self.wire_bytes / 1e6:.1f} MB on the wire) in {self.seconds:.2f} s"
        )


def send_snapshot(agents: Agents, host: str, snap: Snapshot, progress: Progress | None = None) -> Synced:
    started = time.monotonic()
    answer = agents.request(host, "code_have", snapshot=snap.id)
    if isinstance(answer, dict) and answer.get("have"):
        return Synced(host, snap.id, snap.count, snap.size, 0, 0, 0, time.monotonic() - started, True)
    stream = agents.stream(host, ["receive"])
    try:
        up = upload(stream, snap, host, progress)
    except BaseException:
        stream.finish(timeout=5.0)
        raise
    return Synced(
        host,
        snap.id,
        snap.count,
        snap.size,
        up.sent_files,
        up.sent_bytes,
        up.wire_bytes,
        time.monotonic() - started,
        up.had_snapshot,
    )


def send_to_hosts(
    agents: Agents, hosts: list[str], snap: Snapshot, progress_for: ProgressFor | None = None
) -> list[Synced]:
    """Once per distinct host, the hosts in parallel; the first failure is raised (named by host)."""
    distinct = list(dict.fromkeys(hosts))

    def one(host: str) -> Synced | GpudeckError:
        try:
            show = progress_for(host, snap.count, snap.size) if progress_for else None
            return send_snapshot(agents, host, snap, show)
        except GpudeckError as exc:
            return exc

    if len(distinct) <= 1:
        results = [one(h) for h in distinct]
    else:
        with ThreadPoolExecutor(max_workers=min(8, len(distinct))) as pool:
            results = list(pool.map(one, distinct))
    for host, result in zip(distinct, results, strict=True):
        if isinstance(result, GpudeckError):
            message = str(result)
            raise GpudeckError(
                message if message.startswith(f"{host}:") else f"sync to {host}: {message}", result.code
            )
    return [r for r in results if isinstance(r, Synced)]


def code_of(snap: Snapshot, home: str) -> Code:
    """The spec's code field: the snapshot, and the job whose work dir it is."""
    return Code(snapshot=snap.id, home=home, files=snap.count, bytes=snap.size, source=snap.root[:400])


def sync_for_launch(
    agents: Agents, sync: SyncOptions, hosts: list[str], home: str, progress_for: ProgressFor | None = None
) -> Code:
    """A launch's code: the directory's snapshot, on every host of the job (each once, in parallel)."""
    snap, results = sync_directory(agents, sync, hosts, progress_for)
    for synced in results:
        agents.notice(str(synced))
    return code_of(snap, home)


def sync_directory(
    agents: Agents, opts: SyncOptions, hosts: list[str], progress_for: ProgressFor | None = None
) -> tuple[Snapshot, list[Synced]]:
    """The directory's snapshot on every host (each once). A first sync from this machine (no file
    hashed here yet) to hosts whose code store is empty pushes: it reads, hashes and sends each file
    in one pass (tui/sync/push.py); the other hosts get the snapshot the usual way."""
    distinct = list(dict.fromkeys(hosts))
    empty = [h for h in distinct if _store_empty(agents, h)] if HashCache(opts.directory).empty else []
    if not empty:
        snap = take_snapshot(opts)
        return snap, send_to_hosts(agents, distinct, snap, progress_for)
    started = time.monotonic()
    streams: dict[str, ByteStream] = {}
    try:
        with ThreadPoolExecutor(max_workers=min(8, len(empty))) as pool:
            opened = {h: pool.submit(agents.stream, h, ["receive"]) for h in empty}
            for h, future in opened.items():
                streams[h] = future.result()
        snap, pushed = push(opts, streams, progress_for)
    except BaseException:
        for stream in streams.values():
            stream.finish(timeout=5.0)
        raise
    seconds = time.monotonic() - started
    results = {
        h: Synced(
            h,
            snap.id,
            snap.count,
            snap.size,
            u.sent_files,
            u.sent_bytes,
            u.wire_bytes,
            seconds,
            u.had_snapshot,
        )
        for h, u in pushed.items()
    }
    rest = [h for h in distinct if h not in results]
    results.update((r.host, r) for r in send_to_hosts(agents, rest, snap, progress_for))
    return snap, [results[h] for h in distinct]


def _store_empty(agents: Agents, host: str) -> bool:
    answer = agents.request(host, "code_have", snapshot=None)
    return isinstance(answer, dict) and answer.get("empty") is True


def ensure_snapshot(agents: Agents, host: str, code: Code, holders: list[str] | None = None) -> None:
    """A job's own snapshot on a host it was not on (a node joining it): the code the job started
    with, read from the directory here when none of its files changed since, else relayed from
    one of `holders` (the job's hosts) that has it (tui/sync/relay.py)."""
    answer = agents.request(host, "code_have", snapshot=code.snapshot)
    if isinstance(answer, dict) and answer.get("have"):
        return
    found = recall(code.snapshot)
    if found is not None and not found[1]:
        agents.notice(str(send_snapshot(agents, host, found[0])))
        return
    for holder in dict.fromkeys(holders or []):
        if holder != host and _holds(agents, holder, code.snapshot):
            agents.notice(str(relay_snapshot(agents, holder, host, code)))
            return
    if found is None:
        raise GpudeckError(
            f"the job's code snapshot {code.snapshot[:12]} is not on {host}, no host of the job has "
            "it, and this machine did not make it"
        )
    snap, missing = found
    raise GpudeckError(
        f"the job's code snapshot {code.snapshot[:12]} is not on {host}, no host of the job has it, "
        f"and {len(missing)} of its files changed in {snap.source} since (e.g. {missing[0]}): a node "
        "there would run other code than the job's"
    )


def _holds(agents: Agents, host: str, snapshot: str) -> bool:
    try:
        answer = agents.request(host, "code_have", snapshot=snapshot)
    except GpudeckError:  # that host is down: another may do
        return False
    return isinstance(answer, dict) and answer.get("have") is True


def relay_snapshot(agents: Agents, source: str, target: str, code: Code) -> Synced:
    """The snapshot from `source`'s code store into `target`'s, through this machine's memory."""
    started = time.monotonic()
    src = agents.stream(source, ["code_send", code.snapshot])
    try:
        dst = agents.stream(target, ["receive"])
    except BaseException:
        src.finish(timeout=5.0)
        raise
    try:
        up = relay(src, dst, code.snapshot, source, target)
    except BaseException:
        for stream in (src, dst):
            stream.finish(timeout=5.0)
        raise
    return Synced(
        target,
        code.snapshot,
        code.files,
        code.bytes,
        up.sent_files,
        up.sent_bytes,
        up.wire_bytes,
        time.monotonic() - started,
        up.had_snapshot,
        source=source,
    )


def launch_sync(given: SyncOptions | None, host: str) -> SyncOptions | None:
    """What a launch syncs: `--sync`'s options, else the first host's hosts.toml `sync` directory."""
    if given is not None:
        return given
    directory, limit = host_sync_settings(host, host_entry(host).extra)
    if directory is None:
        return None
    return SyncOptions(directory=directory, max_file_size=limit or DEFAULT_MAX_FILE_SIZE)
