"""The entries under a pull's target, parents before children, never through a symlink.

Each directory is opened relative to its parent (O_NOFOLLOW) and listed by its fd; a symlink is an
entry of its own (its target is text, never read), so nothing outside the work dir is reached even
if the job swaps a directory for a link while the walk runs. Names are bytes: not every name is UTF-8.
"""

from __future__ import annotations

import os
import stat
from typing import Iterator, Optional

from .workpath import DIR_FLAGS

MAX_DEPTH = 200  # directories below the target (a generator frame pair each)


class Entry:
    """One entry: `kind` is d (directory), f (regular file), l (symlink) or skip (`why`)."""

    __slots__ = ("rel", "kind", "size", "mtime_ns", "mode", "target", "dir_fd", "name", "why")

    def __init__(
        self,
        rel: bytes,
        kind: str,
        st: Optional[os.stat_result] = None,
        target: bytes = b"",
        dir_fd: int = -1,
        name: bytes = b"",
        why: str = "",
    ) -> None:
        self.rel = rel  # below the target; b"" is the target itself
        self.kind = kind
        self.size = st.st_size if st is not None else 0
        self.mtime_ns = st.st_mtime_ns if st is not None else 0
        self.mode = stat.S_IMODE(st.st_mode) if st is not None else 0
        self.target = target
        self.dir_fd = dir_fd  # a file's directory, open while the walk is suspended at it
        self.name = name
        self.why = why


def walk(parent_fd: int, name: Optional[bytes]) -> Iterator[Entry]:
    """Entries of `name` in `parent_fd` (None: the directory `parent_fd` itself)."""
    if name is None:
        yield Entry(b"", "d", os.fstat(parent_fd))
        for entry in _children(parent_fd, b"", 1):
            yield entry
        return
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError as exc:
        yield Entry(b"", "skip", why=exc.strerror or str(exc))
        return
    for entry in _one(parent_fd, name, b"", st, 0):
        yield entry


def _one(dir_fd: int, name: bytes, rel: bytes, st: os.stat_result, depth: int) -> Iterator[Entry]:
    mode = st.st_mode
    if stat.S_ISREG(mode):
        yield Entry(rel, "f", st, dir_fd=dir_fd, name=name)
    elif stat.S_ISLNK(mode):
        try:
            yield Entry(rel, "l", st, target=os.readlink(name, dir_fd=dir_fd))
        except OSError as exc:
            yield Entry(rel, "skip", why=exc.strerror or str(exc))
    elif stat.S_ISDIR(mode):
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:  # unreadable, or swapped for a link since it was listed
            yield Entry(rel, "skip", why=exc.strerror or str(exc))
            return
        try:
            yield Entry(rel, "d", st)
            yield from _children(fd, rel, depth + 1)
        finally:
            os.close(fd)
    else:
        yield Entry(rel, "skip", why="not a regular file, directory or symlink")


def _children(fd: int, rel: bytes, depth: int) -> Iterator[Entry]:
    if depth > MAX_DEPTH:
        yield Entry(rel, "skip", why="more than %d directories deep" % MAX_DEPTH)
        return
    try:
        names = sorted(os.fsencode(n) for n in os.listdir(fd))  # fsencode undoes listdir's decoding
    except OSError as exc:
        yield Entry(rel, "skip", why=exc.strerror or str(exc))
        return
    for name in names:
        child = rel + b"/" + name if rel else name
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:  # gone since the listing
            yield Entry(child, "skip", why=exc.strerror or str(exc))
            continue
        yield from _one(fd, name, child, st, depth)
