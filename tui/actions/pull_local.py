"""The local side of a pull: what the destination already holds, and atomic writes into it.

Names are bytes (a job may write names that are not UTF-8) and always relative to the pull's root;
one from the wire is refused unless it is plain components under the root. Nothing here follows a
symlink: a link the job made is written as a link, and a directory on the way is checked to be a
real one before anything is written below it, so a pulled link can never carry a write elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator

from remote_agent.transfer.frames import MAX_MANIFEST, fs_name, wire_name

from ..errors import GpudeckError

TEMP_PREFIX = b".gpudeck-pull."


def safe_rel(name: object) -> bytes:
    """A wire name as a path below the root (b"": the root); GpudeckError for anything else."""
    if not isinstance(name, str):
        raise GpudeckError(f"the agent sent a name that is not text: {name!r}")
    raw = fs_name(name)
    if raw and (
        raw.startswith(b"/") or b"\0" in raw or any(p in (b"", b".", b"..") for p in raw.split(b"/"))
    ):
        raise GpudeckError(f"the agent sent a name outside the pull: {name!r}")
    return raw


def manifest(root: bytes) -> Iterator[list[object]]:
    """What the root holds, as the agent's quick check reads it (remote_agent/transfer/send.py)."""
    count = 0
    stack: list[bytes] = [b""]
    while stack and count < MAX_MANIFEST:
        rel = stack.pop()
        path = os.path.join(root, rel) if rel else root
        try:
            st = os.lstat(path)
        except OSError:
            continue
        count += 1
        if stat.S_ISREG(st.st_mode):
            yield ["f", wire_name(rel), st.st_size, st.st_mtime_ns]
        elif stat.S_ISLNK(st.st_mode):
            with contextlib.suppress(OSError):
                yield ["l", wire_name(rel), wire_name(os.readlink(path))]
        elif stat.S_ISDIR(st.st_mode):
            yield ["d", wire_name(rel)]
            with contextlib.suppress(OSError):
                names = [n for n in os.listdir(path) if not n.startswith(TEMP_PREFIX)]
                stack.extend(os.path.join(rel, n) if rel else n for n in sorted(names, reverse=True))


class LocalTree:
    """Writes below `root`, each entry replaced whole (temp + rename) or not at all."""

    def __init__(self, root: bytes) -> None:
        self.root = root
        self._real_dirs: set[bytes] = set()  # rels checked to be directories, not links

    def shown(self, rel: bytes) -> str:
        return os.fsdecode(os.path.join(self.root, rel) if rel else self.root)

    def path(self, rel: bytes) -> bytes:
        """The entry's local path, once every directory above it up to the root is a real directory
        (the root's parent is the user's DEST, taken as it is)."""
        if not rel:
            return self.root
        parents = rel.split(b"/")[:-1]
        for depth in range(len(parents) + 1):
            self.directory(b"/".join(parents[:depth]), 0o700)
        return os.path.join(self.root, rel)

    def directory(self, rel: bytes, mode: int) -> None:
        """A directory at rel: made when missing (with the job's mode, writable by us), a file or
        link there replaced; an existing directory keeps the mode it has here."""
        if rel in self._real_dirs:
            return
        path = os.path.join(self.root, rel) if rel else self.root
        try:
            st: os.stat_result | None = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode):
            os.unlink(path)  # the job has a directory where a file or link was pulled before
            st = None
        if st is None:
            os.mkdir(path, 0o700)
            os.chmod(path, (mode & 0o777) | 0o700)
        self._real_dirs.add(rel)

    def link(self, rel: bytes, target: bytes) -> None:
        path = self.path(rel)
        tmp = self._temp_beside(path)
        os.symlink(target, tmp)
        self._rename(tmp, path, rel)

    def open_file(self, rel: bytes, mode: int) -> FileSink:
        path = self.path(rel)
        tmp = self._temp_beside(path)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        return FileSink(self, rel, path, tmp, fd, mode & 0o777)

    def _temp_beside(self, path: bytes) -> bytes:
        return os.path.join(os.path.dirname(path), TEMP_PREFIX + secrets.token_hex(6).encode())

    def _rename(self, tmp: bytes, path: bytes, rel: bytes) -> None:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                raise GpudeckError(
                    f"{self.shown(rel)}: a directory here, not one on the job's host (move it away to pull it)"
                )
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._real_dirs.discard(rel)


class FileSink:
    """One file being received into its temp file; `commit` gives it its mode and time and renames
    it into place, `abort` removes the temp file."""

    def __init__(self, tree: LocalTree, rel: bytes, path: bytes, tmp: bytes, fd: int, mode: int) -> None:
        self.tree, self.rel, self.path, self.tmp, self.fd, self.mode = tree, rel, path, tmp, fd, mode
        self.size = 0

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        self.size += len(data)

    def commit(self, mtime_ns: int) -> None:
        try:
            os.fchmod(self.fd, self.mode)
            os.close(self.fd)
            self.fd = -1
            # the quick check's other half: the next pull compares the job's time with this one
            os.utime(self.tmp, ns=(mtime_ns, mtime_ns), follow_symlinks=False)
        except BaseException:
            self.abort()
            raise
        self.tree._rename(self.tmp, self.path, self.rel)

    def abort(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)
