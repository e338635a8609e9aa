"""`gpudeck logs JOB [-f] [--json]`: the job's output bytes exactly as printed, each exactly once
(--json: as JSON lines, one per line of output: logs_json.py).

Without -f the bytes are read by offset (`logs`). With -f the agent pushes them as they are
written (`follow`) and ends with the job's exit status; a cut connection re-follows from the next
byte owed (ReconnectingClient), so nothing is lost or repeated.
"""

from __future__ import annotations

import argparse
import base64
import signal
import sys
import threading
from typing import Any, BinaryIO, cast

from remote_agent.serving.output import descriptor_of, write_through
from remote_agent.supervision.outputcap import gap_marker

from ..actions.find import Job, resolve
from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..remote.client import AgentError
from ..session import Session, print_status
from .logs_json import JsonLines

CHUNK = 1 << 20
FOLLOW_TIMEOUT = 7 * 86400.0  # how long the first `follow` request may wait out an outage


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("logs", help="print a job's output (-f: follow until it ends)")
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument(
        "-f", "--follow", action="store_true", help="follow; exit with the job's exit code when it ends"
    )
    p.add_argument("--node", default=None, help="which node's output (default: the first)")
    p.add_argument(
        "--json", action="store_true", help='one JSON object per line: {"node", "line", "text", "t"}'
    )


def job_exit_code(obj: dict[str, Any]) -> int:
    """The code a shell would have seen: the exit code, else 128 + the signal's number."""
    code = obj.get("exit_code")
    if isinstance(code, int):
        return code
    name = obj.get("signal")
    if name and hasattr(signal, name):
        return 128 + int(getattr(signal, name))
    if obj.get("code_unknown"):
        return 1  # ended with nobody to see its code (its supervisor was lost): README's promise
    # `exited` without a code: a watched run (gpudeck watch) that ended by itself, its code unknown.
    return {"killed": 137, "stopped": 143, "exited": 0}.get(obj.get("state", ""), 1)


def run(args: argparse.Namespace, session: Session) -> int:
    if args.follow:
        session.on_status = print_status  # a follower reconnects: say so, and why
        session.retry_first_cut = True  # from its first connection on
    if args.follow:
        known = _indexed_node(session, args.job, args.node)
        if (
            known is not None
        ):  # the local index names its hosts: ask no other host (nor start the local agent)
            return _follow(session, known["host"], args.job, known["node"], _out(args, known["node"]))
    job = resolve(session, args.job)
    node = _pick_node(job, args.node)
    host, out = node["host"], _out(args, node["node"])
    if args.follow:
        return _follow(session, host, job.id, node["node"], out)
    try:
        return _read(session, host, job.id, node["node"], out)
    finally:
        if isinstance(out, JsonLines):
            out.close()  # the last line, unended


def _out(args: argparse.Namespace, node: str) -> BinaryIO:
    """Where the bytes go: stdout as they are, or (--json) as JSON lines."""
    return cast(BinaryIO, JsonLines(sys.stdout.buffer, str(node))) if args.json else sys.stdout.buffer


def _read(session: Session, host: str, job_id: str, node: str, out: BinaryIO) -> int:
    offset = 0
    while True:
        chunk = session.request(host, "logs", timeout=30.0, job=job_id, node=node, offset=offset, limit=CHUNK)
        data = base64.b64decode(chunk["data"])
        if data:
            out.write(data)
            out.flush()
            offset += len(data)
        gap = chunk.get("gap")
        if not data and isinstance(gap, list) and len(gap) == 2 and gap[0] <= offset < gap[1]:
            out.write(gap_marker(offset, gap[1]))  # the output cap dropped these bytes: say how many
            offset = gap[1]
            continue
        if offset >= chunk["size"]:
            return 0


def _follow(session: Session, host: str, job_id: str, node: str, out: BinaryIO) -> int:
    client = session.client(host)
    sink = StdoutSink(out)
    client.set_output_sink(sink)  # written on the reading thread (over SSH paramiko's): no handoff per chunk
    try:
        client.follow(job_id, node, offset=0, timeout=FOLLOW_TIMEOUT)
    except AgentError as exc:
        raise GpudeckError(f"{host}: {exc}", EXIT_NO_SUCH_JOB) from None
    while not sink.done.wait(0.5):
        if not client.connected:  # closed for good (e.g. a changed host key): it said why
            raise GpudeckError(f"{host}: {client.last_error or 'connection closed'}") from None
    if isinstance(out, JsonLines):
        out.close()  # the last line, unended
    if sink.broken is not None:
        raise sink.broken  # stdout went away (`| head`): the CLI's BrokenPipeError path
    end = sink.end or {}
    if end.get("error"):
        raise GpudeckError(str(end["error"]), EXIT_NO_SUCH_JOB)  # names the job and what happened
    return job_exit_code(end)


class StdoutSink:
    """A follow's bytes straight onto stdout, flushed per chunk, from the client's reading thread;
    `done` once the end came (after every byte: the reader calls in order) or stdout broke."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self._fd = descriptor_of(out)
        self.done = threading.Event()
        self.end: dict[str, Any] | None = None
        self.broken: OSError | None = None

    def __call__(self, job: str, node: str, data: bytes | None, end: dict[str, Any] | None) -> None:
        if self.done.is_set():
            return
        if data is not None:
            try:
                write_through(self.out, self._fd, data)
            except (OSError, ValueError) as exc:  # a closed reader: stop, the main thread exits
                self.broken = exc if isinstance(exc, OSError) else BrokenPipeError(str(exc))
                self.done.set()
        elif end is not None:
            self.end = end
            self.done.set()


def _indexed_node(session: Session, job_id: str, wanted: str | None) -> dict[str, Any] | None:
    """The node of an exact job id as the local job index (state.db) has it, when all its hosts are
    this session's; None: ask the hosts (a prefix, a name, a job launched elsewhere, a replay)."""
    try:
        record = session.store.get_job(job_id)
        hosts = set(session.hosts())
    except Exception:  # noqa: BLE001  (an index that cannot be read only costs asking the hosts)
        return None
    if record is None or not record.nodes or not set(record.hosts) <= hosts:
        return None
    nodes = sorted(
        record.nodes, key=lambda n: (len(str(n.get("node"))), str(n.get("node")))
    )  # node "0" first
    return nodes[0] if wanted is None else next((n for n in nodes if n.get("node") == wanted), None)


def _pick_node(job: Job, wanted: str | None) -> dict[str, Any]:
    if wanted is None:
        return job.first
    for node in job.nodes:
        if node["node"] == wanted:
            return node
    from ..errors import EXIT_NO_SUCH_JOB, GpudeckError

    raise GpudeckError(
        f"job {job.id} has no node {wanted!r} (nodes: {', '.join(n['node'] for n in job.nodes)})",
        EXIT_NO_SUCH_JOB,
    )
