"""sha256 of each file, remembered by (path, size, mtime_ns, inode) under the client's data dir, so
an unchanged tree is stat'ed, not read. One cache file per synced directory; derived state: lost
or unreadable, it is rebuilt."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import paths
from .walk import Found

CHUNK = 1 << 20


def cache_path(root: str) -> Path:
    key = hashlib.sha256(os.path.abspath(root).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return paths.data_dir() / "sync" / f"hashes-{key}.json"


class HashCache:
    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(os.path.expanduser(root))
        self.path = cache_path(self.root)
        self.known: dict[str, list[int | str]] = {}
        self.changed = False
        with contextlib.suppress(OSError, ValueError):
            obj = json.loads(self.path.read_bytes())
            if isinstance(obj, dict) and isinstance(obj.get("files"), dict):
                self.known = obj["files"]

    @property
    def empty(self) -> bool:
        """No file of this directory hashed here yet (a first sync from this machine)."""
        return not self.known

    def hashes(self, files: list[Found]) -> dict[str, str]:
        """rel → sha256 of every file; read only those whose size, mtime or inode changed."""
        out: dict[str, str] = {}
        todo: list[Found] = []
        for f in files:
            if f.kind != "f":
                continue
            hit = self.known.get(f.rel)
            if isinstance(hit, list) and hit[:3] == [f.size, f.mtime_ns, f.ino] and isinstance(hit[3], str):
                out[f.rel] = hit[3]
            else:
                todo.append(f)
        if todo:
            with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
                for f, sha in zip(todo, pool.map(self._hash, todo), strict=True):
                    out[f.rel] = sha
                    self.known[f.rel] = [f.size, f.mtime_ns, f.ino, sha]
            self.changed = True
        live = {f.rel for f in files}
        if len(self.known) > len(live):  # files gone from the tree leave the cache too
            self.known = {k: v for k, v in self.known.items() if k in live}
            self.changed = True
        return out

    def remember(self, f: Found, sha: str) -> None:
        """A hash made elsewhere (a push reads each file once): kept under the walk's stat."""
        self.known[f.rel] = [f.size, f.mtime_ns, f.ino, sha]
        self.changed = True

    def _hash(self, f: Found) -> str:
        return file_sha256(os.path.join(self.root, f.rel))

    def save(self) -> None:
        if not self.changed:
            return
        with contextlib.suppress(OSError):  # a cache that cannot be written only costs time
            paths.ensure_private(self.path.parent)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"root": self.root, "files": self.known}, separators=(",", ":")))
            os.replace(tmp, self.path)
            self.changed = False


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()
