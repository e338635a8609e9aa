"""A snapshot of a directory: its files (walk.py), their hashes (hashcache.py) and the canonical
manifest bytes whose sha256 is the snapshot's id (remote_agent/codestore/manifest.py reads them)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass

from remote_agent.codestore import SNAPSHOT_VERSION

from .hashcache import HashCache
from .options import SyncOptions
from .walk import Found, walk


@dataclass(frozen=True)
class Snapshot:
    id: str
    root: str  # the local directory, absolute
    source: str  # as the user named it
    manifest: bytes
    files: tuple[Found, ...]
    hashes: dict[str, str]  # rel → sha256
    seconds: float  # to walk and hash

    @property
    def count(self) -> int:
        return len(self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def paths_of(self) -> dict[str, str]:
        """sha256 → one local file with those bytes (the upload reads it)."""
        out: dict[str, str] = {}
        for f in self.files:
            if f.kind == "f":
                out.setdefault(self.hashes[f.rel], f.rel)
        return out


def take_snapshot(opts: SyncOptions) -> Snapshot:
    started = time.monotonic()
    files = walk(opts)
    cache = HashCache(opts.directory)
    hashes = cache.hashes(files)
    cache.save()
    data = manifest_bytes(files, hashes)
    return Snapshot(
        id=hashlib.sha256(data).hexdigest(),
        root=os.path.abspath(os.path.expanduser(opts.directory)),
        source=opts.directory,
        manifest=data,
        files=tuple(files),
        hashes=hashes,
        seconds=time.monotonic() - started,
    )


def manifest_bytes(files: list[Found], hashes: dict[str, str]) -> bytes:
    """Canonical: entries in path-byte order, compact JSON, ASCII (a non-UTF-8 name as \\udcXX)."""
    entries: list[list[object]] = []
    for f in files:
        if f.kind == "f":
            entries.append([f.rel, "f", int(f.exec), f.size, hashes[f.rel]])
        else:
            entries.append([f.rel, "l", f.target])
    body = {"version": SNAPSHOT_VERSION, "entries": entries}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii")
