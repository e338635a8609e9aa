"""`gpudeck-agent send`: a job's files back to the client, only those it lacks (`gpudeck pull`).

stdout begins with the stream marker (remote_agent/streaming.py). stdin: a request line
`{"job", "node", "path", "compress"}`, then the client's manifest of what it holds at the
destination, one JSON array a line (`["f", NAME, SIZE, MTIME_NS]`, `["l", NAME, TARGET]`,
`["d", NAME]`; names relative to the target, "" the target itself), up to EOF. All of stdin is read
before anything is answered, so a client writing a long manifest never meets a closed pipe.
Then stdout: a header line, an entry line per change (a file's followed by its data frames), an end
line (frames.py; remote_agent/PROTOCOL.md). Exit 0 when the end line was written, 2 on a refusal.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Dict, Iterator, Tuple

from ..streaming import STREAM_MARKER
from .frames import (
    CHUNK,
    END,
    FAILED,
    FRAME,
    MAX_LINE,
    MAX_MANIFEST,
    Packer,
    fs_name,
    line,
    parse_line,
    same_file,
    wire_name,
)
from .walk import Entry, walk
from .workpath import SendError, job_workdir, open_target, parts_of

FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
Held = Dict[bytes, Tuple[Any, ...]]  # name → ("f", size, mtime_ns) | ("l", target) | ("d",)


def send_main(root: Path, stdin: BinaryIO, stdout: BinaryIO) -> int:
    stdout.write(STREAM_MARKER)  # before reading: the client writes nothing until it sees it
    stdout.flush()
    try:
        request, held = read_request(stdin)
        workdir = job_workdir(root, request.get("job"), request.get("node", "0"))
        fd, name = open_target(workdir, parts_of(str(request["path"]), workdir))
    except SendError as exc:
        stdout.write(line({"ok": False, "error": str(exc)}))
        stdout.flush()
        return 2
    try:
        return _answer(stdout, workdir, fd, name, held, request.get("compress") is True)
    except (BrokenPipeError, ConnectionResetError):  # the client went away: nobody to tell
        return 1
    finally:
        os.close(fd)


def read_request(stdin: BinaryIO) -> Tuple[Dict[str, Any], Held]:
    request = parse_line(stdin.readline(MAX_LINE))
    held: Held = {}
    for raw in iter(lambda: stdin.readline(MAX_LINE), b""):
        item = _held(raw)
        if item is not None and len(held) < MAX_MANIFEST:
            held[item[0]] = item[1]
    if request is None or not isinstance(request.get("path"), str):
        raise SendError('the request: expected {"job", "node", "path"} as its first line')
    return request, held


def _held(raw: bytes) -> Any:
    """(name, what) from a manifest line, or None for a line it cannot read (readers are total)."""
    try:
        item = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(item, list) or len(item) < 2 or not isinstance(item[1], str):
        return None
    name = fs_name(item[1])
    if item[0] == "f" and len(item) == 4 and all(isinstance(v, int) for v in item[2:]):
        return name, ("f", item[2], item[3])
    if item[0] == "l" and len(item) == 3 and isinstance(item[2], str):
        return name, ("l", fs_name(item[2]))
    return (name, ("d",)) if item[0] == "d" else None


def _answer(out: BinaryIO, workdir: str, fd: int, name: Any, held: Held, compress: bool) -> int:
    files = size = unchanged = 0
    kind = None
    for entry in walk(fd, name):  # first pass: what will go, for the client's progress
        kind = kind or entry.kind
        if entry.kind == "f" and _wanted(entry, held):
            files += 1
            size += entry.size
        elif entry.kind == "f":
            unchanged += 1
    out.write(line({"ok": True, "workdir": workdir, "type": kind, "files": files, "bytes": size}))
    sent = {"files": 0, "bytes": 0, "links": 0, "dirs": 0, "skipped": 0, "unchanged": unchanged}
    for entry in walk(fd, name):
        if entry.kind == "skip":
            out.write(line({"t": "skip", "p": wire_name(entry.rel), "why": entry.why}))
            sent["skipped"] += 1
        elif not _wanted(entry, held):
            continue
        elif entry.kind == "d":
            out.write(line({"t": "d", "p": wire_name(entry.rel), "mode": entry.mode}))
            sent["dirs"] += 1
        elif entry.kind == "l":
            out.write(line({"t": "l", "p": wire_name(entry.rel), "target": wire_name(entry.target)}))
            sent["links"] += 1
        else:
            sent_bytes = _send_file(out, entry, compress)
            if sent_bytes is not None:
                sent["files"] += 1
                sent["bytes"] += sent_bytes
    out.write(line(dict(sent, t="end")))
    out.flush()
    return 0


def _wanted(entry: Entry, held: Held) -> bool:
    have = held.get(entry.rel)
    if have is None:
        return True
    if entry.kind == "f":
        return not (have[0] == "f" and same_file(int(have[1]), int(have[2]), entry.size, entry.mtime_ns))
    if entry.kind == "l":
        return have != ("l", entry.target)
    return bool(have[0] != entry.kind)


def _send_file(out: BinaryIO, entry: Entry, compress: bool) -> Any:
    """Its entry line and data frames; the bytes sent, or None when it could not be opened (a skip
    line said why). The size and time are taken before reading: a file written meanwhile differs
    from them by the next pull, which sends it again."""
    rel = wire_name(entry.rel)
    try:
        fd = os.open(entry.name, FILE_FLAGS, dir_fd=entry.dir_fd)
    except OSError as exc:  # unreadable, or swapped for a link since the walk saw it
        out.write(line({"t": "skip", "p": rel, "why": exc.strerror or str(exc)}))
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            out.write(line({"t": "skip", "p": rel, "why": "no longer a regular file"}))
            return None
        mode = stat.S_IMODE(st.st_mode)
        out.write(line({"t": "f", "p": rel, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "mode": mode}))
        packer, done = Packer(compress), 0
        try:
            for chunk in _chunks(fd, st.st_size):
                out.write(packer.frame(chunk))
                done += len(chunk)
        except OSError as exc:
            why = (exc.strerror or str(exc)).encode("utf-8", "replace")[:1000]
            out.write(FRAME.pack(FAILED, len(why)) + why)
            return None
        out.write(FRAME.pack(END, 0))
        return done
    finally:
        os.close(fd)


def _chunks(fd: int, size: int) -> Iterator[bytes]:
    """Up to `size` bytes (the size announced); fewer when the file shrank meanwhile."""
    left = size
    while left > 0:
        data = os.read(fd, min(CHUNK, left))
        if not data:
            return
        left -= len(data)
        yield data
