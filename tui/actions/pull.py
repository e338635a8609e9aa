"""`gpudeck pull`: a file or directory of a job's working directory back here, incrementally.

One stream to the agent's `send` (remote_agent/transfer/send.py): the request and the manifest of
what the destination holds go up, the entries that differ come back (rsync's quick check: size and
modification time, which each copy here is given). PATH lands in DEST under its own name
(`pull J ckpt out` → out/ckpt), so a second pull is the same copy, and sends nothing unchanged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from remote_agent.transfer.frames import line

from ..errors import EXIT_NO_SUCH_JOB, EXIT_USAGE, GpudeckError
from ..hosts_file import LOCAL
from .agents import Agents, ByteStream
from .find import Job, resolve
from .pull_local import LocalTree, manifest
from .pull_wire import Reader, Received, receive


@dataclass(frozen=True)
class PullProgress:
    files: int
    files_total: int
    bytes: int
    bytes_total: int
    seconds: float


@dataclass(frozen=True)
class Pulled:
    job: Job
    node: str
    host: str
    path: str
    dest: str  # the local copy's path (DEST/NAME)
    kind: str | None  # what PATH is on the job's host: d, f or l
    got: Received
    unchanged: int
    wire_bytes: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        name = os.path.basename(self.dest)

        def shown(rel: bytes) -> str:
            return os.path.join(name, os.fsdecode(rel)) if rel else name

        return {
            "job": self.job.id,
            "name": self.job.name,
            "node": self.node,
            "host": self.host,
            "path": self.path,
            "dest": self.dest,
            "type": {"d": "directory", "f": "file", "l": "symlink"}.get(self.kind or "", self.kind),
            "copied": [{"path": shown(rel), "size": size} for rel, size in self.got.copied],
            "links": [shown(rel) for rel in self.got.links],
            "skipped": [{"path": shown(rel), "why": why} for rel, why in self.got.skipped],
            "unchanged": self.unchanged,
            "bytes": self.got.bytes,
            "wire_bytes": self.wire_bytes,
            "seconds": round(self.seconds, 3),
        }


def check_path(path: str) -> None:
    if not path or "\0" in path:
        raise GpudeckError(f"pull {path!r}: expected a path in the job's working directory", EXIT_USAGE)
    if ".." in path.split("/"):
        raise GpudeckError(f"pull {path}: '..' leaves the job's working directory", EXIT_USAGE)


def local_name(path: str, job: Job) -> str:
    """The copy's name in DEST: PATH's last component (the job's name for the work dir itself)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return parts[-1] if parts else job.name


def pick_node(job: Job, wanted: str | None) -> dict[str, Any]:
    if wanted is None:
        return job.first
    for node in job.nodes:
        if node["node"] == wanted:
            return node
    nodes = ", ".join(str(n["node"]) for n in job.nodes)
    raise GpudeckError(f"job {job.id} has no node {wanted!r} (nodes: {nodes})", EXIT_NO_SUCH_JOB)


def pull(
    agents: Agents,
    ref: str,
    path: str,
    dest: str | None = None,
    node: str | None = None,
    progress: Callable[[PullProgress], None] | None = None,
) -> Pulled:
    check_path(path)
    job = resolve(agents, ref)
    member = pick_node(job, node)
    host = str(member["host"])
    dest_dir = os.path.abspath(os.path.expanduser(dest or "."))
    if os.path.lexists(dest_dir) and not os.path.isdir(dest_dir):
        raise GpudeckError(f"pull: DEST {dest_dir}: not a directory", EXIT_USAGE)
    os.makedirs(dest_dir, exist_ok=True)
    root = os.path.join(os.fsencode(dest_dir), os.fsencode(local_name(path, job)))
    request = {"job": job.id, "node": member["node"], "path": path, "compress": host != LOCAL}
    started = time.monotonic()
    stream = agents.stream(host, ["send"])
    try:
        _send_request(stream, request, root)
        reader = Reader(stream, lambda: "")
        head = reader.line()
        if head.get("ok") is not True:
            raise GpudeckError(f"{host}: {head.get('error') or 'the agent refused the pull'}")
        files_total, bytes_total = _int(head.get("files")), _int(head.get("bytes"))

        def tell(files: int, done: int) -> None:
            if progress is not None:
                progress(PullProgress(files, files_total, done, bytes_total, time.monotonic() - started))

        got = receive(reader, LocalTree(root), tell)
    except GpudeckError as exc:
        status, last = stream.finish(timeout=5.0)
        said = f" (the agent: status {status}{', ' + last if last else ''})" if status else ""
        raise GpudeckError(f"{exc}{said}", exc.code) from None
    stream.finish()
    return Pulled(
        job=job,
        node=str(member["node"]),
        host=host,
        path=path,
        dest=os.fsdecode(root),
        kind=head.get("type") if isinstance(head.get("type"), str) else None,
        got=got,
        unchanged=_int(got.end.get("unchanged")),
        wire_bytes=reader.wire,
        seconds=time.monotonic() - started,
    )


def _send_request(stream: ByteStream, request: dict[str, Any], root: bytes) -> None:
    """The request line, then the manifest, in writes of about a megabyte, then EOF."""
    batch = [line(request)]
    size = 0
    for item in manifest(root):
        batch.append(line(item))
        size += len(batch[-1])
        if size > 1 << 20:
            stream.write(b"".join(batch))
            batch, size = [], 0
    stream.write(b"".join(batch))
    stream.end_input()


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
