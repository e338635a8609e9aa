"""Where fetched objects and the trees made of them live in the agent dir:
`data/objects/<sha256 of (etag, size)>` (read-only files; a `.part` beside one being fetched) and
`data/trees/<sha256 of the listing>` (directories of hard links to objects, one per listing)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable, List, Tuple

from ..spec import DataObject, DataSource
from ..storage.files import ensure_private_dir


class BadKey(ValueError):
    pass


def data_root(root: Path) -> Path:
    return root / "data"


def objects_dir(root: Path) -> Path:
    return ensure_private_dir(data_root(root) / "objects")


def trees_dir(root: Path) -> Path:
    return ensure_private_dir(data_root(root) / "trees")


def object_name(obj: DataObject) -> str:
    """Content-addressed by what the store says of the bytes: a second job, a restart or another node
    reuses an object whatever its key or bucket, and an object rewritten under its key is new."""
    return hashlib.sha256(("%s\0%d" % (obj.etag.strip('"'), obj.size)).encode("utf-8")).hexdigest()


def prefix_of(url: str) -> str:
    """`s3://bucket/a/b` -> `a/b`: the part of each key that is not its path under PATH."""
    rest = url[len("s3://") :]
    return rest.partition("/")[2]


def relative_path(key: str, prefix: str) -> str:
    """An object's path in the tree: its key after the prefix (and a `/` after it)."""
    rel = key[len(prefix) :] if key.startswith(prefix) else key
    rel = rel.lstrip("/")
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts) or "\0" in rel:
        raise BadKey("object %r: its key makes no safe path under the data's PATH" % key[:200])
    return rel


def tree_files(source: DataSource) -> List[Tuple[str, DataObject]]:
    """(path in the tree, object) for each object that is a file: `dir/` markers (empty keys
    ending in `/`, as consoles make them) are no files."""
    prefix = prefix_of(source.url)
    return [
        (relative_path(o.key, prefix), o) for o in source.objects if not (o.key.endswith("/") and o.size == 0)
    ]


def tree_name(files: Iterable[Tuple[str, DataObject]]) -> str:
    digest = hashlib.sha256()
    for rel, obj in sorted(files, key=lambda f: f[0]):
        digest.update(("%s\0%s\0" % (rel, object_name(obj))).encode("utf-8"))
    return digest.hexdigest()


def is_cached(path: Path, size: int) -> bool:
    """Cached and whole (its size; its bytes were verified when it came)."""
    try:
        return os.stat(str(path)).st_size == size
    except OSError:
        return False
