"""The client's half of `gpudeck-agent receive` (its docstring has the frames): the manifest, the
agent's list of what it lacks, then those blobs in one zlib stream (raw where they would not
shrink), with no round trip per file."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from remote_agent.codestore.receive import EXEC_HINT

from ..actions.agents import ByteStream
from ..errors import EXIT_ERROR, GpudeckError
from .snapshot import Snapshot

SEND_BATCH = 1 << 20  # bytes handed to the stream at once
RAW_CHUNK = 4 << 20
SAMPLE = 64 << 10
# Already compressed: sent raw, not through zlib (it would spend CPU to gain nothing).
PACKED = frozenset(
    [
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".zip",
        ".whl",
        ".jar",
        ".7z",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".webp",
        ".mp3",
        ".mp4",
        ".mkv",
        ".pt",
        ".pth",
        ".ckpt",
        ".safetensors",
        ".npz",
        ".parquet",
        ".onnx",
        ".bin",
        ".h5",
        ".pkl",
        ".so",
    ]
)

Progress = Callable[[int, int, int, bool], None]  # (files sent, bytes sent, bytes on the wire, done)


@dataclass(frozen=True)
class Uploaded:
    snapshot: str
    sent_files: int
    sent_bytes: int  # the files' bytes
    wire_bytes: int  # what crossed the stream (compressed)
    had_snapshot: bool


class UploadError(GpudeckError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_ERROR)


def upload(stream: ByteStream, snap: Snapshot, host: str, progress: Progress | None = None) -> Uploaded:
    sender = Sender(stream)
    sender.frame(b"M", zlib.compress(snap.manifest, 1))
    sender.flush()
    asked = read_answer(stream, host)
    if asked.get("snapshot") != snap.id:
        raise UploadError(
            f"{host}: the agent read another snapshot ({asked.get('snapshot')!r}, not {snap.id})"
        )
    need = asked.get("need") or []
    local = snap.blobs
    sent_files = sent_bytes = 0
    for sha in need:
        rel = local.get(sha)
        if rel is None:
            raise UploadError(f"{host}: the agent asked for a blob this snapshot does not have")
        sent_bytes += sender.blob(os.path.join(snap.root, rel), sha, rel)
        sent_files += 1
        if progress is not None:
            progress(sent_files, sent_bytes, sender.wire, False)
    sender.end()
    if progress is not None:
        progress(sent_files, sent_bytes, sender.wire, True)
    read_answer(stream, host)  # the outcome: counts the agent wrote
    status, last = stream.finish()
    if status not in (0, None):
        raise UploadError(f"{host}: receive exited with status {status}: {last}")
    return Uploaded(snap.id, sent_files, sent_bytes, sender.wire, bool(asked.get("have")))


def read_answer(stream: ByteStream, host: str) -> dict[str, Any]:
    head = stream.read_exactly(4)
    (length,) = struct.unpack(">I", head)
    if length > 64 << 20:
        raise UploadError(f"{host}: receive answered {length} bytes: not our agent")
    obj = json.loads(stream.read_exactly(length))
    if not isinstance(obj, dict):
        raise UploadError(f"{host}: receive answered {obj!r}"[:200])
    if "error" in obj:
        raise UploadError(f"{host}: {obj['error']}")
    return obj


class Sink(Protocol):
    """What a Sender writes to: a ByteStream, or push.py's Fanout to several."""

    def write(self, data: bytes) -> None: ...

    def end_input(self) -> None: ...


class Sender:
    """Frames batched into large writes; one zlib stream through every compressible blob
    (`compress=False`: every blob raw, e.g. after a push, whose zlib stream this one cannot join)."""

    def __init__(self, stream: Sink, compress: bool = True) -> None:
        self.stream = stream
        self.compress = compress
        self.out: list[bytes] = []
        self.pending = 0
        self.wire = 0
        self.deflate = zlib.compressobj(1)
        self.zbuf: list[bytes] = []
        self.zlen = 0
        self.zdirty = False  # input given to zlib and not flushed yet

    def frame(self, kind: bytes, payload: bytes) -> None:
        self.out.append(kind + struct.pack(">I", len(payload)))
        self.out.append(payload)
        self.pending += 5 + len(payload)
        self.wire += 5 + len(payload)
        if self.pending >= SEND_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.out:
            self.stream.write(b"".join(self.out))
            self.out, self.pending = [], 0

    def _z(self, data: bytes) -> None:
        self.zdirty = True
        out = self.deflate.compress(data)
        if out:
            self.zbuf.append(out)
            self.zlen += len(out)
            if self.zlen >= SEND_BATCH:
                self._zflush(zlib.Z_NO_FLUSH)

    def _zflush(self, mode: int) -> None:
        if not (self.zdirty or self.zbuf):
            return  # nothing compressed since the last flush: no empty block on the wire
        if mode != zlib.Z_NO_FLUSH:
            self.zbuf.append(self.deflate.flush(mode))
            self.zdirty = False
        data = b"".join(self.zbuf)
        self.zbuf, self.zlen = [], 0
        for i in range(0, len(data), RAW_CHUNK):
            self.frame(b"z", data[i : i + RAW_CHUNK])

    def blob(self, path: str, sha: str, rel: str, exec_hint: bool = False) -> int:
        """Send one file as a record; its bytes must still hash to `sha`. `exec_hint`: a pushed
        blob's mode (the receive's EXEC_HINT bit in the size)."""
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                header = sha.encode("ascii") + struct.pack(">Q", size | (EXEC_HINT if exec_hint else 0))
                h = hashlib.sha256()
                compress = self.compress and _compressible(f, path, size)
                if not compress and (self.zdirty or self.zbuf):
                    self._zflush(zlib.Z_SYNC_FLUSH)
                send = self._z if compress else self._raw
                send(header)
                left = size
                while left:
                    chunk = f.read(min(left, RAW_CHUNK))
                    if not chunk:
                        break
                    h.update(chunk)
                    send(chunk)
                    left -= len(chunk)
        except OSError as exc:
            raise UploadError(f"sync: cannot read {rel}: {exc.strerror or exc}") from None
        if left or h.hexdigest() != sha:
            raise UploadError(f"sync: {rel} changed while it was being sent: run the sync again")
        return size

    def blob_bytes(self, sha: str, data: bytes, path: str, exec_hint: bool) -> None:
        """A small file already read (and hashed) whole, as a pushed record."""
        header = sha.encode("ascii") + struct.pack(">Q", len(data) | (EXEC_HINT if exec_hint else 0))
        compress = self.compress and (
            os.path.splitext(path)[1].lower() not in PACKED
            and (len(data) < 4 * SAMPLE or len(zlib.compress(data[:SAMPLE], 1)) < 0.9 * SAMPLE)
        )
        if compress:
            self._z(header)
            self._z(data)
        else:
            if self.zdirty or self.zbuf:
                self._zflush(zlib.Z_SYNC_FLUSH)
            self.frame(b"r", header + data)

    def sync_flush(self) -> None:
        """Everything given so far on its way, whole records (before the manifest of a push)."""
        self._zflush(zlib.Z_SYNC_FLUSH)
        self.flush()

    def _raw(self, data: bytes) -> None:
        self.frame(b"r", data)

    def end(self) -> None:
        self._zflush(zlib.Z_SYNC_FLUSH)
        self.frame(b"e", b"")
        self.flush()
        self.stream.end_input()


def _compressible(f: Any, path: str, size: int) -> bool:
    if os.path.splitext(path)[1].lower() in PACKED:
        return False
    if size < 4 * SAMPLE:
        return True
    sample = f.read(SAMPLE)
    f.seek(0)
    return len(zlib.compress(sample, 1)) < 0.9 * len(sample)
