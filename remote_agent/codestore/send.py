"""`gpudeck-agent code_send SNAPSHOT`: a snapshot this host holds, streamed out in the very frames
`receive` reads, so a client can relay it to another host's `receive` byte for byte (a node that
joins a job on a new host gets the job's code from a host that runs it, whatever changed in the
client's directory since the launch).

Out (after the stream marker): `M` (the manifest, zlib-compressed). In: `LENGTH (u32) JSON`
`{"need": [sha256, …]}` (what the other host lacks: the `need` of its `receive`). Out: the blob
records `SHA256 SIZE BYTES` of those, in `z` frames (one zlib stream) or `r` frames (a blob that
does not compress), then `e`. A problem: a `!` frame `{"error": "one line"}`, exit status 1.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from pathlib import Path
from typing import IO, Dict, List, Optional

from .manifest import ManifestError, blob_sizes, is_sha, parse
from .receive import MAX_FRAME, ReceiveError
from .store import CodeStore

CHUNK = 1 << 20
SAMPLE = 64 << 10


def code_send(
    root: Path, snapshot: str, inp: Optional[IO[bytes]] = None, out: Optional[IO[bytes]] = None
) -> int:
    from ..streaming import begin_stream

    begin_stream()
    inp = inp or sys.stdin.buffer
    out = out or sys.stdout.buffer
    store = CodeStore(root)
    try:
        if not is_sha(snapshot):
            raise ReceiveError("code_send: not a snapshot id: %r" % (snapshot[:80],))
        with store.locked():  # shared: gc waits until the blobs are out
            _send(store, snapshot, inp, out)
        return 0
    except (ReceiveError, ManifestError, OSError, ValueError) as exc:
        message = str(exc) if not isinstance(exc, OSError) else "code_send: %s" % exc
        frame(out, b"!", json.dumps({"error": message}).encode("utf-8"))
        out.flush()
        sys.stderr.write("gpudeck-agent code_send: %s\n" % message)
        return 1


def frame(out: IO[bytes], kind: bytes, payload: bytes) -> None:
    out.write(kind + struct.pack(">I", len(payload)))
    out.write(payload)


def _send(store: CodeStore, snapshot: str, inp: IO[bytes], out: IO[bytes]) -> None:
    data = store.read_snapshot(snapshot)
    if data is None or not store.has_snapshot(snapshot, touch=True):
        raise ReceiveError("code_send: snapshot %s is not on this host" % snapshot[:12])
    entries = parse(data)
    frame(out, b"M", zlib.compress(data, 1))
    out.flush()
    need = _read_need(inp, blob_sizes(entries))
    exec_of: Dict[str, bool] = {}
    for e in entries:
        if e.kind == "f":
            exec_of.setdefault(e.sha, e.exec)
    deflate = zlib.compressobj(1)
    pending: List[bytes] = []
    for sha in need:
        path = store.blob(sha, exec_of[sha])
        if not path.exists():
            path = store.blob(sha, not exec_of[sha])
        with open(str(path), "rb") as f:
            first = f.read(CHUNK)
            raw = len(first) >= 4 * SAMPLE and len(zlib.compress(first[:SAMPLE], 1)) >= 0.9 * SAMPLE
            size = os.fstat(f.fileno()).st_size  # the manifest's: the receiver checks
            header = sha.encode("ascii") + struct.pack(">Q", size)
            if raw:  # whole records only: the zlib stream so far is flushed first
                _flush_z(out, deflate, pending)
                frame(out, b"r", header)
            else:
                pending.append(deflate.compress(header))
            chunk = first
            while chunk:
                if raw:
                    frame(out, b"r", chunk)
                else:
                    pending.append(deflate.compress(chunk))
                    if sum(len(p) for p in pending) >= CHUNK:
                        _flush_z(out, deflate, pending, sync=False)
                chunk = f.read(CHUNK)
    _flush_z(out, deflate, pending)
    frame(out, b"e", b"")
    out.flush()


def _flush_z(out: IO[bytes], deflate: zlib._Compress, pending: List[bytes], sync: bool = True) -> None:
    if sync:
        pending.append(deflate.flush(zlib.Z_SYNC_FLUSH))
    body = b"".join(pending)
    del pending[:]
    if body:
        frame(out, b"z", body)


def _read_need(inp: IO[bytes], sizes: Dict[str, int]) -> List[str]:
    head = inp.read(4)
    if len(head) < 4:
        raise ReceiveError("code_send: the stream ended before the list of blobs")
    (length,) = struct.unpack(">I", head)
    if length > MAX_FRAME:
        raise ReceiveError("code_send: a list of %d bytes is over the limit" % length)
    body = inp.read(length)
    try:
        need = json.loads(body.decode("utf-8"))["need"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ReceiveError('code_send: expected {"need": [sha256, ...]}') from None
    if not isinstance(need, list) or any(not isinstance(s, str) or s not in sizes for s in need):
        raise ReceiveError("code_send: need: only blobs of the snapshot may be asked for")
    return need
