"""Where the code store's files are, and the few operations on them (see __init__)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import shutil
from pathlib import Path
from typing import Iterator, Optional, Tuple

from ..storage.files import ensure_private_dir, open_private, write_private_atomic
from .manifest import is_sha

BLOB_MODE = 0o444
EXEC_MODE = 0o555


class CodeStore:
    def __init__(self, root: Path) -> None:
        self.dir = root / "code"
        self.blobs = self.dir / "blobs"
        self.snapshots = self.dir / "snapshots"
        self.placed = self.dir / "placed"
        self.tmp = self.dir / "tmp"
        self._serial = itertools.count(1)  # next() is atomic: writer threads share it
        self._token = os.urandom(4).hex()  # two stores in one process never share a temp name

    def ensure(self) -> CodeStore:
        for d in (self.dir, self.blobs, self.snapshots, self.placed, self.tmp):
            ensure_private_dir(d)
        return self

    # -- blobs -----------------------------------------------------------------------------------

    def blob(self, sha: str, exec_bit: bool = False) -> Path:
        return self.blobs / sha[:2] / (sha + (".x" if exec_bit else ""))

    def has_blob(self, sha: str) -> bool:
        """Either variant: the other is made from it on this host."""
        return self.blob(sha).exists() or self.blob(sha, True).exists()

    def is_empty(self) -> bool:
        """No blob stored (gc may leave empty prefix dirs behind)."""
        try:
            prefixes = list(os.scandir(str(self.blobs)))
        except FileNotFoundError:
            return True
        for prefix in prefixes:
            with contextlib.suppress(OSError), os.scandir(prefix.path) as it:
                if next(it, None) is not None:
                    return False
        return True

    def put_verified(self, tmp: str, sha: str, exec_bit: bool) -> None:
        """A temp file (made read-only by open_temp) whose sha256 was checked, renamed into place."""
        name = sha + ".x" if exec_bit else sha
        os.replace(tmp, "%s/%s/%s" % (self.blobs, sha[:2], name))  # its <2 hex> dir: made by the caller

    def ensure_variant(self, sha: str, exec_bit: bool) -> None:
        """The blob with the mode asked for, copied from the other variant when only that one is here."""
        target = self.blob(sha, exec_bit)
        if target.exists():
            return
        source = self.blob(sha, not exec_bit)
        tmp, fd = self.open_temp(exec_bit)
        with os.fdopen(fd, "wb") as out, open(str(source), "rb") as src:
            shutil.copyfileobj(src, out)
        self.put_verified(tmp, sha, exec_bit)

    def open_temp(self, exec_bit: bool, sha: Optional[str] = None) -> Tuple[str, int]:
        """A new temp file, read-only from the start (its fd still writes): no chmod per blob. With
        `sha`, beside that blob's final name (writers then spread over the 256 prefix dirs)."""
        where = "%s/%s" % (self.blobs, sha[:2]) if sha else str(self.tmp)
        path = "%s/.tmp-%d-%s-%d" % (where, os.getpid(), self._token, next(self._serial))
        mode = EXEC_MODE if exec_bit else BLOB_MODE
        return path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot(self, snapshot_id: str) -> Path:
        if not is_sha(snapshot_id):
            raise ValueError("not a snapshot id: %r" % (snapshot_id,))
        return self.snapshots / (snapshot_id + ".json")

    def has_snapshot(self, snapshot_id: str, touch: bool = False) -> bool:
        """`touch`: mark it used now (gc keeps snapshots used in its last N days)."""
        path = self.snapshot(snapshot_id)
        if touch:
            try:
                os.utime(str(path))
            except FileNotFoundError:
                return False
            except OSError:
                pass  # a read-only store still answers
        return path.exists()

    def write_snapshot(self, snapshot_id: str, data: bytes) -> None:
        write_private_atomic(self.snapshot(snapshot_id), data)

    def read_snapshot(self, snapshot_id: str) -> Optional[bytes]:
        try:
            return self.snapshot(snapshot_id).read_bytes()
        except FileNotFoundError:
            return None

    # -- the store's lock ------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, exclusive: bool = False) -> Iterator[None]:
        """Shared: a receive or a materialize (many at once); exclusive: gc, alone."""
        self.ensure()
        fd = open_private(self.dir / "lock", os.O_RDWR | os.O_CREAT)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                    break
                except OSError as exc:
                    if exc.errno != errno.EINTR:
                        raise
            yield
        finally:
            os.close(fd)  # releases the lock
