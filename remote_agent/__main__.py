"""Entry point of the agent (also the zipapp's): `serve`, `run JOB_DIR`, `prepare STEP JOB_DIR`,
`send` (a job's files back: gpudeck pull), `receive` (a code snapshot's files), `code_send` (a
snapshot's files for another host's receive), `hello`, `keeper AGENT_DIR` (adopts lost jobs while
nobody looks: supervision/keeper.py), `metrics-serve AGENT_DIR ADDR:PORT` (the host's /metrics:
exporter/daemon.py),
`slurm-node JOB_ROOT` (a Slurm node's supervisor, run by srun: slurm/nodestart.py), `slurm-warn
JOB_ROOT SECONDS` (the time limit is near: slurm/warning.py), `slurm-gpus` (a node's GPUs for a
watched Slurm job: slurm/stepgpus.py), `--version`.

Exit codes: 0 ok; 2 bad usage or unreadable spec; 3 the job already has a supervisor.
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional

from . import PROTOCOL, VERSION


def _supervise(args: List[str]) -> Optional[int]:
    """`run JOB_DIR [--adopt=WHY]` and `keeper ROOT` as serve and the supervisors spawn them, without
    argparse: a supervisor stays up for its job's life, and argparse (with gettext, textwrap) would
    stay loaded in every one of them (issue 33). None: anything else, for the full parser."""
    if len(args) == 2 and args[0] == "keeper" and not args[1].startswith("-"):
        from pathlib import Path

        from .supervision.keeper import keep

        return keep(Path(args[1]))
    if args[:1] != ["run"] or len(args) not in (2, 3) or args[1].startswith("-"):
        return None
    adopt = None
    if len(args) == 3:
        if not args[2].startswith("--adopt="):
            return None
        adopt = args[2][len("--adopt=") :]
    from .supervision.entry import run_job_dir

    return run_job_dir(args[1], adopt=adopt)


def main(argv: Optional[List[str]] = None) -> None:
    code = _supervise(sys.argv[1:] if argv is None else argv)
    if code is not None:
        sys.exit(code)
    import argparse

    parser = argparse.ArgumentParser(prog="gpudeck-agent", description="gpudeck's agent (stdlib only).")
    parser.add_argument(
        "--version", action="version", version="gpudeck-agent %s (protocol %d)" % (VERSION, PROTOCOL)
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve_p = sub.add_parser("serve", help="answer JSON-line requests on stdin/stdout")
    serve_p.add_argument("--agent-dir", help="default: $GPUDECK_AGENT_DIR or ~/.gpudeck")
    serve_p.add_argument(
        "--heartbeat",
        type=float,
        default=0.0,
        metavar="S",
        help="push a heartbeat every S seconds; exit when the client is silent 4*S (0: off)",
    )
    serve_p.add_argument(
        "--sessions",
        action="store_true",
        help="serve many clients' sessions, framed (a warm connection's one serve: PROTOCOL.md)",
    )
    run_p = sub.add_parser("run", help="supervise one job (started by serve, detached)")
    run_p.add_argument("job_dir")
    run_p.add_argument(
        "--adopt", metavar="WHY", help="take over a lost job (its supervisor is gone, its processes live)"
    )
    slurm_node_p = sub.add_parser(
        "slurm-node", help="run by srun in a Slurm allocation: this node's supervisor (remote_agent/slurm)"
    )
    slurm_node_p.add_argument("job_root", help="jobs/<id> in the shared agent dir")
    slurm_warn_p = sub.add_parser(
        "slurm-warn", help="run by a Slurm batch script near its time limit: every node stops (checkpoints)"
    )
    slurm_warn_p.add_argument("job_root")
    slurm_warn_p.add_argument("seconds", type=int)
    sub.add_parser(
        "slurm-gpus", help="run by srun --overlap in a watched Slurm job: this node's GPUs, one JSON line"
    )
    keeper_p = sub.add_parser("keeper", help="adopt lost jobs of an agent dir while nobody looks")
    keeper_p.add_argument("root")
    metrics_p = sub.add_parser(
        "metrics-serve", help="serve this host's /metrics (started by the metrics_listen op, detached)"
    )
    metrics_p.add_argument("root")
    metrics_p.add_argument("listen", help="ADDRESS:PORT")
    prepare_p = sub.add_parser("prepare", help="one step of a job's preparation (run by its script)")
    prepare_p.add_argument("step", choices=("files", "env", "image"))
    prepare_p.add_argument("job_dir")
    prepare_p.add_argument("--python", help="env: the job's interpreter, after its setup lines")
    prepare_p.add_argument(
        "--in-container", action="store_true", help="env: run inside the job's container (keyed by its image)"
    )
    send_p = sub.add_parser("send", help="send files of a job's work dir (request on stdin: gpudeck pull)")
    send_p.add_argument("--agent-dir")
    receive_p = sub.add_parser(
        "receive", help="a code snapshot's missing files, as a byte stream (codestore)"
    )
    receive_p.add_argument("--agent-dir")
    code_send_p = sub.add_parser(
        "code_send", help="a snapshot's files for another host's receive, as a byte stream (codestore)"
    )
    code_send_p.add_argument("snapshot")
    code_send_p.add_argument("--agent-dir")
    pty_p = sub.add_parser(
        "pty", help="run a job's command under a pseudo-terminal (spec.pty; run by its supervisor)"
    )
    pty_p.add_argument("argv", nargs=argparse.REMAINDER)
    hello_p = sub.add_parser("hello", help="print this host's hello as JSON and exit")
    hello_p.add_argument("--agent-dir")
    hello_p.add_argument("--stream", action="store_true", help="as a byte stream: the stream marker first")
    args = parser.parse_args(argv)

    if args.command == "run":
        from .supervision.entry import run_job_dir

        sys.exit(run_job_dir(args.job_dir, adopt=args.adopt))
    if args.command == "pty":
        from .supervision.ptyrelay import relay

        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        sys.exit(relay(argv) if argv else 2)
    if args.command == "slurm-node":
        from .slurm.nodestart import start_node

        sys.exit(start_node(args.job_root))
    if args.command == "slurm-warn":
        from .slurm.warning import warn_nodes

        sys.exit(warn_nodes(args.job_root, args.seconds))
    if args.command == "slurm-gpus":
        from .slurm.stepgpus import print_node_gpus

        sys.exit(print_node_gpus())
    if args.command == "keeper":
        from pathlib import Path

        from .supervision.keeper import keep

        sys.exit(keep(Path(args.root)))
    if args.command == "metrics-serve":
        from pathlib import Path

        from .exporter.daemon import serve as serve_metrics

        sys.exit(serve_metrics(Path(args.root), args.listen))
    if args.command == "prepare":
        from .prepare.entry import run_step

        sys.exit(run_step(args.step, args.job_dir, args.python, args.in_container))
    from .storage.layout import agent_dir

    if args.command == "receive":
        from .codestore.receive import receive

        sys.exit(receive(agent_dir(args.agent_dir)))
    if args.command == "code_send":
        from .codestore.send import code_send

        sys.exit(code_send(agent_dir(args.agent_dir), args.snapshot))
    if args.command == "serve":
        if args.sessions:  # a warm connection's one serve (serving/sessions.py)
            from .serving.sessions import serve_sessions

            code = serve_sessions(agent_dir(args.agent_dir), heartbeat=args.heartbeat)
        else:
            from .serving.serve import serve

            code = serve(agent_dir(args.agent_dir), heartbeat=args.heartbeat)
        sys.stdout.flush()
        # Not sys.exit: that would wait for op threads (a stop may wait out a 60 s grace), and
        # after a cut serve must be gone within seconds. The supervisors own the jobs.
        os._exit(code)
    if args.command == "send":
        from .transfer.send import send_main

        sys.exit(send_main(agent_dir(args.agent_dir), sys.stdin.buffer, sys.stdout.buffer))
    from .serving.output import LineWriter
    from .serving.serve import Server
    from .storage.jsonio import dumps

    if args.stream:
        from .streaming import begin_stream

        begin_stream()
    server = Server(agent_dir(args.agent_dir), LineWriter(sys.stdout.buffer))
    print(dumps(server.op_hello({})))


if __name__ == "__main__":
    main()
