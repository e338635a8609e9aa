"""A first sync to hosts whose code store is empty: each file read once, hashed, compressed and
sent in one pass — blobs ahead of their manifest (the receive's push, remote_agent/PROTOCOL.md) —
so the hosts create files while this side still reads and hashes, as `tar c | ssh tar x` overlaps
its two ends. Then the manifest; each host answers what it still lacks (nothing, unless a host
got blobs from elsewhere meanwhile), which goes raw; then the end.

The compressed bytes are made once and written to every host's stream by that stream's own
thread (the SSH encryption of one host neither holds up the reading nor the other hosts)."""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ..actions.agents import ByteStream
from ..errors import GpudeckError
from .hashcache import HashCache, file_sha256
from .options import SyncOptions
from .snapshot import Snapshot, made_snapshot, manifest_bytes
from .upload import Progress, Sender, Uploaded, UploadError, read_answer
from .walk import Found, walk

SMALL = 4 << 20  # read whole and sent from memory; a larger file is hashed, then streamed
QUEUED = 16  # writes (of ~1 MB) waiting per host: memory stays bounded while a host is slow


def push(
    opts: SyncOptions,
    streams: dict[str, ByteStream],
    progress: Callable[[str, int, int], Progress | None] | None = None,
) -> tuple[Snapshot, dict[str, Uploaded]]:
    """The directory's snapshot, pushed to every stream (each a fresh `receive`)."""
    started = time.monotonic()
    files = walk(opts)
    root = os.path.abspath(os.path.expanduser(opts.directory))
    count, total = len(files), sum(f.size for f in files)
    shows = {h: progress(h, count, total) if progress else None for h in streams}
    cache = HashCache(opts.directory)
    out = Fanout(streams)
    sender = Sender(out)
    hashes: dict[str, str] = {}
    blobs: dict[str, str] = {}
    found: list[Found] = []
    sent_bytes = 0
    try:
        for f in files:
            if f.kind == "f":
                sha, size = _push_one(sender, root, f, blobs)
                if blobs.setdefault(sha, f.rel) == f.rel:
                    sent_bytes += size
                hashes[f.rel] = sha
                cache.remember(f, sha)
                f = replace(f, size=size)  # the bytes sent, should the file have changed since the walk
                for show in shows.values():
                    if show is not None:
                        show(len(blobs), sent_bytes, sender.wire, False)
            found.append(f)
        cache.save()
        data = manifest_bytes(found, hashes)
        snap = made_snapshot(opts, root, data, found, blobs, started)
        sender.sync_flush()
        sender.frame(b"M", _compressed(data))
        sender.flush()
    except BaseException:
        out.close(quiet=True)
        raise
    out.close()
    done = {
        host: _finish(stream, host, snap, len(blobs), sent_bytes, sender.wire)
        for host, stream in streams.items()
    }
    for show in shows.values():
        if show is not None:
            show(len(blobs), sent_bytes, sender.wire, True)
    return snap, done


def _push_one(sender: Sender, root: str, f: Found, blobs: dict[str, str]) -> tuple[str, int]:
    """Read, hash and (unless an earlier file had the same bytes) send one file: (sha256, size)."""
    path = os.path.join(root, f.rel)
    try:
        if f.size <= SMALL:
            with open(path, "rb") as fh:
                data = fh.read()
            sha = hashlib.sha256(data).hexdigest()
            if sha not in blobs:
                sender.blob_bytes(sha, data, path, f.exec)
            return sha, len(data)
        sha = file_sha256(path)
    except OSError as exc:
        raise UploadError(f"sync: cannot read {f.rel}: {exc.strerror or exc}") from None
    size = sender.blob(path, sha, f.rel, exec_hint=f.exec) if sha not in blobs else os.path.getsize(path)
    return sha, size


def _compressed(data: bytes) -> bytes:
    import zlib

    return zlib.compress(data, 1)


def _finish(stream: ByteStream, host: str, snap: Snapshot, files: int, sent: int, wire: int) -> Uploaded:
    """The host's answer to the manifest; what it still lacks, raw; the end and its outcome."""
    asked = read_answer(stream, host)
    if asked.get("snapshot") != snap.id:
        raise UploadError(
            f"{host}: the agent read another snapshot ({asked.get('snapshot')!r}, not {snap.id})"
        )
    rest = Sender(stream, compress=False)  # the pushed zlib stream is this host's: no second one
    for sha in asked.get("need") or []:
        rel = snap.blobs.get(sha)
        if rel is None:
            raise UploadError(f"{host}: the agent asked for a blob this snapshot does not have")
        sent += rest.blob(os.path.join(snap.root, rel), sha, rel)
        files += 1
    rest.end()
    read_answer(stream, host)
    status, last = stream.finish()
    if status not in (0, None):
        raise UploadError(f"{host}: receive exited with status {status}: {last}")
    return Uploaded(snap.id, files, sent, wire + rest.wire, bool(asked.get("have")))


class Fanout:
    """A ByteStream-like writer: each write goes to every host's stream, from that stream's thread."""

    def __init__(self, streams: dict[str, ByteStream]) -> None:
        self.errors: dict[str, BaseException] = {}
        self.queues: dict[str, queue.Queue[bytes | None]] = {}
        self.threads: list[threading.Thread] = []
        for host, stream in streams.items():
            q: queue.Queue[bytes | None] = queue.Queue(QUEUED)
            t = threading.Thread(target=self._drain, args=(host, stream, q), name=f"push-{host}", daemon=True)
            self.queues[host] = q
            self.threads.append(t)
            t.start()

    def _drain(self, host: str, stream: ByteStream, q: queue.Queue[bytes | None]) -> None:
        while (data := q.get()) is not None:
            if host in self.errors:
                continue  # keep taking, so the reader never blocks on a host that broke
            try:
                stream.write(data)
            except BaseException as exc:  # noqa: BLE001 — raised in the pushing thread
                self.errors[host] = exc

    def write(self, data: bytes) -> None:
        self._raise()
        for q in self.queues.values():
            q.put(data)

    def end_input(self) -> None:  # the receive's end comes later, per host (_finish)
        pass

    def close(self, quiet: bool = False) -> None:
        """Every write done (or failed); the first failure raised, named by its host."""
        for q in self.queues.values():
            q.put(None)
        for t in self.threads:
            t.join()
        if not quiet:
            self._raise()

    def _raise(self) -> None:
        for host, exc in self.errors.items():
            message = str(exc)
            code = exc.code if isinstance(exc, GpudeckError) else 1
            raise GpudeckError(message if message.startswith(f"{host}:") else f"{host}: {message}", code)
