"""`prepare files`' code step: the job's work dir made to hold exactly its snapshot's files.

Files are hard links to the store's read-only blobs (no bytes copied; a job that writes to one gets
EACCES instead of corrupting the store). A file already linked to the right blob is left alone, a
wrong or missing one replaced. Files the snapshot lacks stay (checkpoints of an earlier run in the
same home) unless an earlier snapshot put them there: `code/placed/<home>.json` records what was
placed. Two nodes of one job on one host share the work dir: a lock file makes them take turns.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..spec import Code
from ..storage.files import open_private, write_private_atomic
from .manifest import Entry, ManifestError, encode_name, parse, totals
from .store import CodeStore

DIR_MODE = 0o755


def materialize(root: Path, code: Code, workdir: Path) -> None:
    from ..prepare.entry import PrepareError

    started = time.monotonic()
    store = CodeStore(root).ensure()
    with store.locked():  # gc waits until the links are made
        data = store.read_snapshot(code.snapshot)
        if data is None:
            raise PrepareError("code snapshot %s is not on this host (collected by gc?)" % code.snapshot[:12])
        store.has_snapshot(code.snapshot, touch=True)
        try:
            entries = parse(data)
        except ManifestError as exc:
            raise PrepareError("code snapshot %s: %s" % (code.snapshot[:12], exc)) from None
        fd = open_private(store.placed / (code.home + ".lock"), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            record = store.placed / (code.home + ".json")
            placer = Placer(store, os.fsencode(str(workdir)))
            placer.apply(entries, _placed_before(record))
            body = {
                "snapshot": code.snapshot,
                "paths": [e.path.decode("utf-8", "surrogateescape") for e in entries],
            }
            write_private_atomic(record, json.dumps(body).encode("utf-8"))
        finally:
            os.close(fd)
    files, size = totals(entries)
    sys.stdout.write(
        "[gpudeck] code %s: %d files, %.1f MB in %s: %d placed, %d kept, %d removed (%.2f s)\n"
        % (
            code.snapshot[:12],
            files,
            size / 1e6,
            workdir,
            placer.placed,
            placer.kept,
            placer.removed,
            time.monotonic() - started,
        )
    )
    sys.stdout.flush()


def _placed_before(record: Path) -> List[bytes]:
    try:
        obj = json.loads(record.read_text("utf-8"))
        return [encode_name(p) for p in obj["paths"] if isinstance(p, str)]
    except (OSError, ValueError, KeyError, TypeError):
        return []  # no record (a first run) or an unreadable one: nothing is removed


class Placer:
    def __init__(self, store: CodeStore, workdir: bytes) -> None:
        self.store = store
        self.root = workdir
        self.dirs: Set[bytes] = set()
        self.blob_ids: Dict[Tuple[str, bool], Tuple[int, int]] = {}
        self.placed = self.kept = self.removed = 0

    def apply(self, entries: List[Entry], before: List[bytes]) -> None:
        keep = {e.path for e in entries}
        for path in before:
            if path not in keep:
                self._remove_stale(path)
        for e in entries:
            self._parents(e.path)
            if e.kind == "f":
                self._file(e)
            else:
                self._link(e)

    def _full(self, path: bytes) -> bytes:
        return self.root + b"/" + path

    def _remove_stale(self, path: bytes) -> None:
        full = self._full(path)
        try:
            st = os.lstat(full)
        except OSError:
            return
        if stat.S_ISDIR(st.st_mode):
            return  # the job made a directory there: its own
        os.unlink(full)
        self.removed += 1
        parent = os.path.dirname(path)
        while parent:  # directories only our files were in
            try:
                os.rmdir(self._full(parent))
            except OSError:
                break
            parent = os.path.dirname(parent)

    def _parents(self, path: bytes) -> None:
        parent = os.path.dirname(path)
        if not parent or parent in self.dirs:
            return
        self._parents(parent)
        full = self._full(parent)
        st = _lstat(full)
        if st is None or not stat.S_ISDIR(st.st_mode):
            if st is not None:
                os.unlink(full)  # a file or a link where the snapshot has a directory
            os.mkdir(full, DIR_MODE)
        self.dirs.add(parent)

    def _blob(self, e: Entry) -> Tuple[bytes, Tuple[int, int]]:
        blob = os.fsencode(str(self.store.blob(e.sha, e.exec)))
        key = (e.sha, e.exec)
        ident = self.blob_ids.get(key)
        if ident is None:
            st = os.stat(blob)
            ident = self.blob_ids[key] = (st.st_dev, st.st_ino)
        return blob, ident

    def _file(self, e: Entry) -> None:
        full = self._full(e.path)
        blob, ident = self._blob(e)
        st = _lstat(full)
        if st is not None:
            if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == ident:
                self.kept += 1
                return
            _clear(full, st)
        try:
            os.link(blob, full)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EMLINK, errno.EPERM, errno.EACCES):
                raise
            shutil.copyfile(blob, full)  # another file system, or the blob's link count is full
            os.chmod(full, 0o755 if e.exec else 0o644)
        self.placed += 1

    def _link(self, e: Entry) -> None:
        full = self._full(e.path)
        st = _lstat(full)
        if st is not None:
            if stat.S_ISLNK(st.st_mode) and os.readlink(full) == e.target:
                self.kept += 1
                return
            _clear(full, st)
        os.symlink(e.target, full)
        self.placed += 1


def _lstat(path: bytes) -> Optional[os.stat_result]:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _clear(path: bytes, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)  # the snapshot has a file here
    else:
        os.unlink(path)
