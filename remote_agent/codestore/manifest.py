"""A snapshot's manifest: canonical JSON bytes the client made, checked here before anything is
written. Paths are `str` in JSON; a name that is not UTF-8 travels with its bytes as lone
surrogates (Python's surrogateescape, `\\udcXX` in JSON), so any name survives the trip.

    {"version": 1, "entries": [[path, "f", exec (0|1), size, sha256], [path, "l", target], …]}

Entries are sorted by their path's bytes and unique (one canonical form per tree).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import SNAPSHOT_VERSION

MAX_ENTRIES = 1 << 20
MAX_PATH = 4096
MAX_FILE_SIZE = 1 << 40
HEX = frozenset("0123456789abcdef")


class ManifestError(Exception):
    """The manifest is not one this agent accepts; the message names the entry."""


class Entry(NamedTuple):
    path: bytes  # relative, '/'-separated
    kind: str  # "f" or "l"
    exec: bool = False
    size: int = 0
    sha: str = ""  # files
    target: bytes = b""  # links


def snapshot_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_sha(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= HEX


def encode_name(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def parse(data: bytes) -> List[Entry]:
    """Every entry, checked: safe relative paths, no file below a link or another file, links
    that stay inside the tree. ManifestError otherwise."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ManifestError("manifest: not JSON: %s" % exc) from None
    if not isinstance(obj, dict) or obj.get("version") != SNAPSHOT_VERSION:
        raise ManifestError("manifest: expected version %d" % SNAPSHOT_VERSION)
    raw = obj.get("entries")
    if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
        raise ManifestError("manifest: entries: expected a list of at most %d" % MAX_ENTRIES)
    entries = [_entry(item, i) for i, item in enumerate(raw)]
    _check_tree(entries)
    return entries


def _entry(item: Any, i: int) -> Entry:
    if not isinstance(item, list) or len(item) < 3 or not isinstance(item[0], str):
        raise ManifestError("manifest: entries[%d]: expected [path, kind, …]" % i)
    try:
        path = encode_name(item[0])
    except UnicodeEncodeError:
        raise ManifestError("manifest: entries[%d]: path not encodable" % i) from None
    _check_path(path, i)
    if item[1] == "f" and len(item) == 5:
        exec_bit, size, sha = item[2], item[3], item[4]
        if exec_bit not in (0, 1) or isinstance(exec_bit, bool):
            raise ManifestError("manifest: %r: exec: expected 0 or 1" % _shown(path))
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_FILE_SIZE:
            raise ManifestError("manifest: %r: bad size %r" % (_shown(path), size))
        if not is_sha(sha):
            raise ManifestError("manifest: %r: bad sha256 %r" % (_shown(path), sha))
        return Entry(path, "f", bool(exec_bit), size, sha)
    if item[1] == "l" and len(item) == 3 and isinstance(item[2], str):
        target = encode_name(item[2])
        if not target or b"\0" in target or target.startswith(b"/") or len(target) > MAX_PATH:
            raise ManifestError("manifest: %r: link target must be relative" % _shown(path))
        inside = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if inside == b".." or inside.startswith(b"../"):
            raise ManifestError("manifest: %r: link points outside the tree" % _shown(path))
        return Entry(path, "l", target=target)
    raise ManifestError(
        "manifest: %r: expected a file [path, 'f', exec, size, sha256] or a link" % _shown(path)
    )


def _check_path(path: bytes, i: int) -> None:
    parts = path.split(b"/")
    if not path or len(path) > MAX_PATH or b"\0" in path or any(p in (b"", b".", b"..") for p in parts):
        raise ManifestError("manifest: entries[%d]: unsafe path %r" % (i, _shown(path)))


def _check_tree(entries: List[Entry]) -> None:
    seen: Dict[bytes, str] = {}
    previous: Optional[bytes] = None
    for e in entries:
        if previous is not None and e.path <= previous:
            raise ManifestError("manifest: %r: entries not sorted or repeated" % _shown(e.path))
        previous = e.path
        seen[e.path] = e.kind
    for e in entries:
        parent = posixpath.dirname(e.path)
        while parent:
            if parent in seen:
                raise ManifestError(
                    "manifest: %r: lies below %r, which is not a directory" % (_shown(e.path), _shown(parent))
                )
            parent = posixpath.dirname(parent)


def _shown(path: bytes) -> str:
    return path.decode("utf-8", "replace")[:300]


def totals(entries: List[Entry]) -> Tuple[int, int]:
    """(files, bytes) of a snapshot: links count as files of no bytes."""
    return len(entries), sum(e.size for e in entries)


def blob_sizes(entries: List[Entry]) -> Dict[str, int]:
    return {e.sha: e.size for e in entries if e.kind == "f"}
