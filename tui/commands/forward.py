"""`gpudeck forward JOB PORT[:LOCAL] [--node K]`: a port of the job's node (TensorBoard, Jupyter, a
serving endpoint) on this machine, over the node host's SSH connection (tui/remote/forward.py)."""

from __future__ import annotations

import argparse
import re

from ..actions.find import resolve
from ..errors import EXIT_USAGE, GpudeckError
from ..printable import printable
from ..session import LOCAL, Session, ssh_connection, ssh_transport_for

_PORTS = re.compile(r"([0-9]{1,5})(?::([0-9]{1,5}))?")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "forward",
        help="a port of a job's node here, over SSH (TensorBoard, Jupyter, a server)",
        description="Listen on 127.0.0.1:LOCAL (default: the same port) and carry each connection to "
        "127.0.0.1:PORT on the job's node host, over its SSH connection (jump hosts as configured). A "
        "connection cut is survived; Ctrl-C ends it.",
    )
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument(
        "port", metavar="PORT[:LOCAL]", help="the port on the node, and the local one (0: any free)"
    )
    p.add_argument("--node", default="0", metavar="K", help="the job's node (default 0, rank 0)")


def ports(text: str) -> tuple[int, int]:
    m = _PORTS.fullmatch(text.strip())
    remote = int(m.group(1)) if m else 0
    local = int(m.group(2)) if m and m.group(2) is not None else remote
    if not m or not 1 <= remote <= 65535 or not 0 <= local <= 65535:
        raise GpudeckError(
            f"forward: {text!r}: expected PORT or PORT:LOCAL (1-65535; LOCAL 0: any free)", EXIT_USAGE
        )
    return remote, local


def run(args: argparse.Namespace, session: Session) -> int:
    from ..remote.forward import Forward, listen

    remote, local = ports(args.port)
    job = resolve(session, args.job)
    node = next((n for n in job.nodes if str(n.get("node")) == args.node), None)
    if node is None:
        have = ", ".join(str(n.get("node")) for n in job.nodes)
        raise GpudeckError(f"forward: job {job.id} has no node {args.node!r} (nodes: {have})", EXIT_USAGE)
    host = str(node["host"])
    if job.ended:
        session.notice(f"job {job.id} has {job.state}: its port may be closed")
    if host == LOCAL:  # the port is on this machine already
        print(f"http://127.0.0.1:{remote}  (job {job.id} runs here: nothing to forward)")
        return 0
    try:
        sock = listen(local)
    except OSError as exc:
        raise GpudeckError(f"forward: local port {local}: {exc.strerror or exc}") from None
    try:
        first = ssh_connection(host, session.settings)
    except GpudeckError:
        sock.close()
        raise
    fwd = Forward(lambda: ssh_transport_for(host, config=session.settings).connect(), remote, sock, first)
    port = sock.getsockname()[1]
    print(
        printable(f"http://127.0.0.1:{port} → {host}:{remote} (job {job.id} node {args.node}); Ctrl-C ends"),
        flush=True,
    )
    try:
        fwd.serve()
    except KeyboardInterrupt:
        pass
    finally:
        fwd.close()
    for error in dict.fromkeys(fwd.errors):
        session.notice(f"forward: {host}:{remote}: {error}")
    return 0
