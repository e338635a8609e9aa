"""`gpudeck-agent receive`: a snapshot's missing blobs, then its manifest, over one byte stream.

The client's bytes are frames `KIND (1 byte) LENGTH (u32, big-endian) PAYLOAD`:

    M  the manifest, zlib-compressed (the first frame)
    z  a piece of one zlib stream that runs through the whole upload
    r  raw bytes (a blob that does not compress)
    e  the end: every blob was sent

What `z` and `r` carry, joined in order, is one run of blob records: `SHA256 (64 hex) SIZE (u64)
BYTES`. The agent answers with frames `LENGTH (u32) JSON`: after `M` the blobs it lacks
(`{"snapshot", "have", "need"}`), after `e` the outcome (`{"snapshot", "files", "bytes",
"received", "received_bytes"}`), or `{"error"}` at the first problem (and exit status 1).

A push (a first sync to an empty store) sends `z`/`r` records before `M`: blobs as the client
hashes them, so the host writes while the client still reads and hashes (nothing waits for the
whole tree's manifest). Each is verified by its sha256 like any other; SIZE's top bit says the
file has the exec bit (which variant to write). `need` then names what is still missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Deque, Dict, List, Optional, Set, Tuple

from ..storage.files import ensure_private_dir
from .manifest import Entry, ManifestError, blob_sizes, is_sha, parse, snapshot_id, totals
from .store import CodeStore

MAX_MANIFEST = 512 << 20  # decompressed
MAX_FRAME = 64 << 20
HEADER = 72  # 64 hex digits and a u64 size
EXEC_HINT = 1 << 63  # in a pushed record's size: the file has the exec bit
MAX_BLOB = 1 << 40  # a pushed blob's size before any manifest bounds it
BUFFERED = 4 << 20  # blobs up to this size are checked in memory, then written by a writer thread
INFLIGHT = 64 << 20  # bytes handed to the writers and not yet written
# Writer threads: 0 writes each blob inline. Measured on a loaded 2-core host, 4 writers made a
# 5,000-file receive slower (1.32 s against 0.95 s inline): the GIL and the cores are the limit there.
WRITERS = 0


class ReceiveError(Exception):
    """The upload cannot go on; the message is the answer's one line."""


def receive(root: Path, inp: Optional[IO[bytes]] = None, out: Optional[IO[bytes]] = None) -> int:
    from ..streaming import begin_stream

    begin_stream()
    inp = inp or sys.stdin.buffer
    out = out or sys.stdout.buffer
    store = CodeStore(root).ensure()
    try:
        with store.locked():
            _receive(store, inp, out)
        return 0
    except (ReceiveError, ManifestError, OSError, zlib.error) as exc:
        message = str(exc) if not isinstance(exc, OSError) else "receive: %s" % exc
        answer(out, {"error": message})
        sys.stderr.write("gpudeck-agent receive: %s\n" % message)
        return 1


def answer(out: IO[bytes], obj: Dict[str, Any]) -> None:
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    out.write(struct.pack(">I", len(body)) + body)
    out.flush()


def read_frame(inp: IO[bytes]) -> Tuple[bytes, bytes]:
    head = inp.read(5)
    if len(head) < 5:
        raise ReceiveError("receive: the stream ended early")
    kind, length = head[:1], struct.unpack(">I", head[1:])[0]
    if length > MAX_FRAME:
        raise ReceiveError("receive: a frame of %d bytes is over the limit" % length)
    payload = inp.read(length) if length else b""
    if len(payload) < length:
        raise ReceiveError("receive: the stream ended inside a frame")
    return kind, payload


def _receive(store: CodeStore, inp: IO[bytes], out: IO[bytes]) -> None:
    stream = zlib.decompressobj()
    blobs = BlobWriter(store)
    try:
        kind, payload = read_frame(inp)
        while kind in (b"z", b"r"):  # a push: blobs ahead of their manifest
            blobs.feed(stream.decompress(payload) if kind == b"z" else payload)
            kind, payload = read_frame(inp)
        if kind != b"M":
            raise ReceiveError("receive: expected the manifest first")
        blobs.settle()
        if blobs.sha is not None or blobs.pending:
            raise ReceiveError("receive: the manifest came inside a pushed blob")
        inflater = zlib.decompressobj()
        data = inflater.decompress(payload, MAX_MANIFEST)
        if inflater.unconsumed_tail or not inflater.eof:
            raise ReceiveError("receive: the manifest is over %d bytes or cut short" % MAX_MANIFEST)
        sid = snapshot_id(data)
        entries = parse(data)
        have = store.has_snapshot(sid, touch=True)
        sizes = blob_sizes(entries)
        need = [] if have else sorted(sha for sha in sizes if not store.has_blob(sha))
        answer(out, {"snapshot": sid, "have": have, "need": need})
        blobs.expect(entries, set(need))
        while True:
            kind, payload = read_frame(inp)
            if kind == b"z":
                blobs.feed(stream.decompress(payload))
            elif kind == b"r":
                blobs.feed(payload)
            elif kind == b"e":
                break
            else:
                raise ReceiveError("receive: unknown frame %r" % kind)
        blobs.finish()
    finally:
        blobs.close()
    if not have:
        for sha, exec_bit in sorted({(e.sha, e.exec) for e in entries if e.kind == "f"}):
            if blobs.written.get(sha) != exec_bit:  # not just written as that variant
                store.ensure_variant(sha, exec_bit)
        store.write_snapshot(sid, data)  # last: a snapshot that exists is whole
    files, size = totals(entries)
    answer(
        out,
        {
            "snapshot": sid,
            "files": files,
            "bytes": size,
            "received": len(blobs.done),
            "received_bytes": blobs.received_bytes,
        },
    )


class BlobWriter:
    """Blob records from the joined `z`/`r` bytes. Each blob's sha256 is checked as it arrives; a
    verified blob is written to a temp file beside its final name (read-only from its creation) and
    renamed into place, inline or by WRITERS threads (blobs over BUFFERED are streamed to their temp
    file as they arrive)."""

    def __init__(self, store: CodeStore) -> None:
        self.store = store
        self.need: Optional[Set[str]] = None  # None: a push, before the manifest (any blob)
        self.sizes: Dict[str, int] = {}
        self.exec: Dict[str, bool] = {}
        self.written: Dict[str, bool] = {}  # sha256 → the variant written (exec bit)
        self.done: Set[str] = set()
        self.received_bytes = 0
        self.pending = b""  # a record header cut between chunks
        self.sha: Optional[str] = None
        self.exec_bit = False
        self.left = 0
        self.parts: List[bytes] = []  # a buffered blob's bytes so far
        self.fd = -1  # a streamed blob's temp file
        self.tmp: Optional[str] = None
        self.hasher: Any = None
        self.dirs: Set[str] = set()
        self.pool = ThreadPoolExecutor(max_workers=WRITERS) if WRITERS else None
        self.inflight: Deque[Tuple[Future, int]] = deque()  # type: ignore[type-arg]
        self.inflight_bytes = 0

    def expect(self, entries: List[Entry], need: Set[str]) -> None:
        """The manifest is in: from now on only its blobs in `need`, of its sizes and modes."""
        self.need = need
        self.sizes = blob_sizes(entries)
        for e in entries:
            if e.kind == "f":
                self.exec.setdefault(e.sha, e.exec)  # the first entry's variant; others are copies

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.sha is None:
                take = HEADER - len(self.pending)
                self.pending += bytes(view[:take])
                view = view[take:]
                if len(self.pending) < HEADER:
                    return
                self._begin(self.pending)
                self.pending = b""
                if self.left == 0:
                    self._end()
                continue
            piece = view[: self.left]
            view = view[len(piece) :]
            self.hasher.update(piece)
            self.left -= len(piece)
            if self.fd < 0:
                self.parts.append(bytes(piece))
            else:
                while piece:
                    piece = piece[os.write(self.fd, piece) :]
            if self.left == 0:
                self._end()

    def _begin(self, header: bytes) -> None:
        sha = header[:64].decode("ascii", "replace")
        raw = struct.unpack(">Q", header[64:])[0]
        if self.need is None:  # pushed: checked against its own sha256 (and gc keeps it only if named)
            size, exec_bit = raw & ~EXEC_HINT, bool(raw & EXEC_HINT)
            if not is_sha(sha) or sha in self.done or size > MAX_BLOB:
                raise ReceiveError("receive: a pushed blob %s is repeated or malformed" % sha[:16])
            self.sizes[sha] = size
        else:
            if sha not in self.need or sha in self.done:
                raise ReceiveError("receive: blob %s was not asked for" % sha[:16])
            size, exec_bit = raw, self.exec[sha]
            if size != self.sizes[sha]:
                raise ReceiveError(
                    "receive: blob %s: %d bytes, the manifest says %d" % (sha[:16], size, self.sizes[sha])
                )
        self.sha, self.left, self.exec_bit = sha, size, exec_bit
        self.hasher = hashlib.sha256()
        prefix = sha[:2]
        if prefix not in self.dirs:
            ensure_private_dir(self.store.blobs / prefix)
            self.dirs.add(prefix)
        if size > BUFFERED:
            self.tmp, self.fd = self.store.open_temp(exec_bit, sha)

    def _end(self) -> None:
        sha = self.sha
        assert sha is not None
        if self.hasher.hexdigest() != sha:
            if self.fd >= 0:
                os.close(self.fd)
                os.unlink(str(self.tmp))
            raise ReceiveError("receive: blob %s arrived damaged (its sha256 differs)" % sha[:16])
        if self.fd >= 0:
            os.close(self.fd)
            self.store.put_verified(str(self.tmp), sha, self.exec_bit)
            self.fd, self.tmp = -1, None
        else:
            data = b"".join(self.parts)
            self.parts = []
            if self.pool is None:
                self._write(sha, data, self.exec_bit)
            else:
                self.inflight.append((self.pool.submit(self._write, sha, data, self.exec_bit), len(data)))
                self.inflight_bytes += len(data)
                while self.inflight_bytes > INFLIGHT:  # memory stays bounded while the disk is slow
                    self._settle_one()
        self.done.add(sha)
        self.written[sha] = self.exec_bit
        self.received_bytes += self.sizes[sha]
        self.sha, self.hasher = None, None

    def _write(self, sha: str, data: bytes, exec_bit: bool) -> None:
        tmp, fd = self.store.open_temp(exec_bit, sha)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        self.store.put_verified(tmp, sha, exec_bit)

    def _settle_one(self) -> None:
        future, size = self.inflight.popleft()
        self.inflight_bytes -= size
        future.result()  # a writer's OSError (a full disk) ends the receive here

    def settle(self) -> None:
        """Every blob handed to the writers is on disk (has_blob sees it)."""
        while self.inflight:
            self._settle_one()

    def finish(self) -> None:
        try:
            self.settle()
        finally:
            self.close()
        if self.sha is not None or self.pending:
            raise ReceiveError("receive: the upload ended inside a blob")
        missing = (self.need or set()) - self.done
        if missing:
            raise ReceiveError("receive: %d blob(s) asked for never came" % len(missing))

    def close(self) -> None:
        """After a failure: the writers stop; what they wrote is whole or left as temp files (gc)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True)
