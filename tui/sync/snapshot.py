"""A snapshot of a directory: its files (walk.py), their hashes (hashcache.py) and the canonical
manifest bytes whose sha256 is the snapshot's id (remote_agent/codestore/manifest.py reads them).

Each snapshot's manifest is also kept on this machine (`<data dir>/sync/snapshots/<id>.json`), so
a node that joins a job later (a scale onto a new host) can be sent the job's snapshot even after
files changed here: every blob still found in the directory is read from it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from remote_agent.codestore import SNAPSHOT_VERSION

from .. import paths
from .hashcache import HashCache
from .options import SyncOptions
from .walk import Found, walk


@dataclass(frozen=True)
class Snapshot:
    id: str
    root: str  # the local directory, absolute
    source: str  # as the user named it
    manifest: bytes
    count: int  # files and links
    size: int  # bytes
    blobs: dict[str, str]  # sha256 → a file under root with those bytes (what the upload reads)
    seconds: float = 0.0  # to walk and hash


def take_snapshot(opts: SyncOptions) -> Snapshot:
    started = time.monotonic()
    files = walk(opts)
    cache = HashCache(opts.directory)
    hashes = cache.hashes(files)
    cache.save()
    data = manifest_bytes(files, hashes)
    blobs: dict[str, str] = {}
    for f in files:
        if f.kind == "f":
            blobs.setdefault(hashes[f.rel], f.rel)
    root = os.path.abspath(os.path.expanduser(opts.directory))
    return made_snapshot(opts, root, data, files, blobs, started)


def made_snapshot(
    opts: SyncOptions, root: str, data: bytes, files: list[Found], blobs: dict[str, str], started: float
) -> Snapshot:
    """The snapshot of `files` whose manifest is `data`, remembered here (a later scale finds it);
    a walk and a push make it alike."""
    snap = Snapshot(
        id=hashlib.sha256(data).hexdigest(),
        root=root,
        source=opts.directory,
        manifest=data,
        count=len(files),
        size=sum(f.size for f in files),
        blobs=blobs,
        seconds=time.monotonic() - started,
    )
    remember(snap, opts.include_git)
    return snap


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


def _record(snapshot_id: str) -> Path:
    return paths.data_dir() / "sync" / "snapshots" / f"{snapshot_id}.json"


def remember(snap: Snapshot, include_git: bool) -> None:
    """Keep the manifest here: a later scale onto a new host may need it."""
    path = _record(snap.id)
    if path.exists():
        return
    with contextlib.suppress(OSError):  # only a later scale onto a new host needs it
        paths.ensure_private(path.parent)
        body = {
            "root": snap.root,
            "source": snap.source,
            "include_git": include_git,
            "manifest": snap.manifest.decode("ascii"),
        }
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(body))
        os.replace(tmp, path)


def recall(snapshot_id: str) -> tuple[Snapshot, list[str]] | None:
    """A snapshot made here before, its blobs found in its directory as it is now; with the paths
    of the files whose bytes are no longer there. None: this machine never made it."""
    try:
        body = json.loads(_record(snapshot_id).read_text())
        manifest = body["manifest"].encode("ascii")
        entries = json.loads(manifest)["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    wanted = {e[4]: e[0] for e in entries if e[1] == "f"}
    blobs: dict[str, str] = {}
    with contextlib.suppress(Exception):  # the directory may be gone: nothing found there
        opts = SyncOptions(body["root"], include_git=bool(body.get("include_git")), max_file_size=1 << 62)
        now = take_snapshot(opts)
        blobs = {sha: rel for sha, rel in now.blobs.items() if sha in wanted}
    snap = Snapshot(
        id=snapshot_id,
        root=body["root"],
        source=body["source"],
        manifest=manifest,
        count=len(entries),
        size=sum(e[3] for e in entries if e[1] == "f"),
        blobs=blobs,
    )
    return snap, sorted(rel for sha, rel in wanted.items() if sha not in blobs)
