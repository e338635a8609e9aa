"""Where the code store's files are, and the few operations on them (see __init__)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import time
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

    def put_verified(self, tmp: Path, sha: str, exec_bit: bool) -> None:
        """A temp file whose sha256 was checked, renamed into place read-only."""
        os.chmod(str(tmp), EXEC_MODE if exec_bit else BLOB_MODE)
        os.replace(str(tmp), str(self.blob(sha, exec_bit)))  # its <2 hex> dir: made by the caller

    def ensure_variant(self, sha: str, exec_bit: bool) -> None:
        """The blob with the mode asked for, copied from the other variant when only that one is here."""
        target = self.blob(sha, exec_bit)
        if target.exists():
            return
        source = self.blob(sha, not exec_bit)
        tmp = self.temp_path()
        shutil.copyfile(str(source), str(tmp))
        self.put_verified(tmp, sha, exec_bit)

    def temp_path(self) -> Path:
        return self.tmp / ("%d-%d-%d" % (os.getpid(), time.monotonic_ns(), id(self)))

    def open_temp(self) -> Tuple[Path, int]:
        path = self.temp_path()
        return path, open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)

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
