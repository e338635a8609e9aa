"""A multi-node job's plan: which host each node runs on, and each node's command line and env.

Nodes are placed on the hosts round-robin (two nodes may share a host: their node names, the ranks
"0", "1", ..., keep them apart). With `--launcher torchrun` each node runs torchrun's static
rendezvous (`--nnodes N --node-rank R`, rank 0's host as master); with `--launcher none` the command
runs as is and learns its place from the environment. Pure: no IO but choosing a free port.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass

from remote_agent.spec import Multinode

from ..hosts_file import LOCAL
from .options import LaunchOptions, usage

LOCAL_ADDR = "127.0.0.1"
DEFAULT_PORT = 29500  # torchrun's own default, for masters on SSH hosts
_PYTHON = re.compile(r"python[0-9.]*")


@dataclass(frozen=True)
class NodePlan:
    host: str
    node: str  # the rank, as the node's name
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    multinode: Multinode


def is_multinode(opts: LaunchOptions) -> bool:
    """Anything but the plain one-node launch (which runs the command untouched, as always)."""
    return (
        opts.nodes > 1
        or opts.launcher is not None
        or len(opts.hosts) > 1
        or bool(opts.pool)
        or bool(opts.elastic)
    )


def place(hosts: tuple[str, ...], nodes: int) -> list[str]:
    return [hosts[i % len(hosts)] for i in range(nodes)]


def free_port() -> int:
    """A port free on this machine now: right for `local` masters only, and racy (another process
    may take it before torchrun binds it); pass --master-port to choose."""
    with socket.socket() as s:
        s.bind((LOCAL_ADDR, 0))
        return int(s.getsockname()[1])


def master_address(hosts: list[str], given: str | None) -> str:
    if given:
        return given
    if all(h == LOCAL for h in hosts):
        return LOCAL_ADDR
    raise usage(
        f"--master-addr: needed when nodes run on SSH hosts ({', '.join(sorted(set(hosts)))}): "
        "the address the other nodes reach the first node's host at"
    )


# Elastic rendezvous (FACTS.md): torch's own store sharing deadlocks a scale-up; keep-alives find a
# node that left within ~3 s; a 3 s last call lets a restarted node rejoin the round it belongs to.
ELASTIC_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1", "GPUDECK_ELASTIC": "1"}
RDZV_CONF = (
    "last_call_timeout=3,join_timeout=300,close_timeout=30,keep_alive_interval=1,keep_alive_max_attempt=3"
)
MAX_RESTARTS = 1000  # each node that leaves, or joins mid-step, uses one on the nodes that stay


def static_flags(nnodes: int, rank: int, nproc: int, addr: str, port: int) -> list[str]:
    return [
        f"--nnodes={nnodes}",
        f"--node-rank={rank}",
        f"--nproc-per-node={nproc}",
        f"--master-addr={addr}",
        f"--master-port={port}",
    ]


def elastic_flags(
    bounds: tuple[int, int], nproc: int, addr: str, port: int, rdzv_id: str, rank: int
) -> list[str]:
    """c10d rendezvous at the master's port; node 0's torchrun hosts the store (`is_host`), and
    `scale -1` never stops node 0, so the store never goes away under the others."""
    return [
        f"--nnodes={bounds[0]}:{bounds[1]}",
        f"--nproc-per-node={nproc}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={addr}:{port}",
        f"--rdzv-id={rdzv_id}",
        f"--max-restarts={MAX_RESTARTS}",
        f"--rdzv-conf=is_host={'true' if rank == 0 else 'false'},{RDZV_CONF}",
    ]


def launcher_argv(argv: tuple[str, ...], flags: list[str]) -> list[str]:
    """torchrun's line for one node: `<python> -m torch.distributed.run … <rest>` when the command
    starts with a Python interpreter (that interpreter kept, its own options before `-m`), else
    `torchrun …` (`--no-python` unless the command is a .py script)."""
    prog = os.path.basename(argv[0])
    if prog == "torchrun":
        raise usage("the command already starts torchrun: use --launcher none to run it as is")
    if _PYTHON.fullmatch(prog):
        rest = list(argv[1:])
        py_opts = []
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
            py_opts.append(rest.pop(0))
        if not rest or rest[0] in ("-c", "-"):
            raise usage(f"{prog}: torchrun runs a script or `-m module`, not -c or stdin")
        if rest[0] == "-m" and "torch.distributed.run" in rest[1:2]:
            raise usage("the command already starts torchrun: use --launcher none to run it as is")
        # gpudeck's own trainer gets the torchrun that ends a stop with exit 0, not a traceback.
        launcher = "trainer.torchrun" if rest[:2] == ["-m", "trainer"] else "torch.distributed.run"
        return [argv[0], *py_opts, "-m", launcher, *flags, *rest]
    no_python = [] if prog.endswith(".py") else ["--no-python"]
    return ["torchrun", *flags, *no_python, *argv]


def plan(opts: LaunchOptions, rdzv_id: str = "gpudeck", first_rank: int = 0) -> list[NodePlan]:
    """Every node's host, argv and env (the option's env plus the GPUDECK_* placement). Elastic:
    `rdzv_id` names the rendezvous (the job id); `first_rank` numbers nodes that join a running job."""
    hosts = place(opts.placed_on, opts.nodes)
    # a job with a pool is meant to grow: torchrun from its first node on
    launcher = opts.launcher or ("torchrun" if opts.nodes > 1 or opts.pool or opts.elastic else "none")
    addr = master_address(hosts, opts.master_addr)
    chosen = opts.master_port is None
    port = opts.master_port or (free_port() if addr == LOCAL_ADDR and hosts[0] == LOCAL else DEFAULT_PORT)
    out = []
    for rank, host in enumerate(hosts, start=first_rank):
        env = dict(opts.env, **(ELASTIC_ENV if opts.elastic else {}))
        env.update(
            GPUDECK_NODE_RANK=str(rank),
            GPUDECK_NNODES=str(opts.nodes),
            GPUDECK_MASTER_ADDR=addr,
            GPUDECK_MASTER_PORT=str(port),
        )
        if launcher == "none":
            env.update(MASTER_ADDR=addr, MASTER_PORT=str(port), NODE_RANK=str(rank), NNODES=str(opts.nodes))
            argv = list(opts.argv)
        else:
            flags = (
                elastic_flags(opts.elastic, opts.nproc_per_node, addr, port, rdzv_id, rank)
                if opts.elastic
                else static_flags(opts.nodes, rank, opts.nproc_per_node, addr, port)
            )
            argv = launcher_argv(opts.argv, flags)
        multinode = Multinode(
            nodes=opts.nodes,
            rank=rank,
            host=host,
            hosts=tuple(hosts),
            launcher=launcher,
            nproc_per_node=opts.nproc_per_node,
            master_addr=addr,
            master_port=port,
            port_chosen=chosen,
            command=tuple(opts.argv),
            # what a resize needs to start a node on a host the job is not on yet (env names only:
            # the values stay on the hosts), and where it may go
            pool=tuple(opts.pool),
            pinned=() if opts.pool else tuple(opts.hosts),
            setup=tuple(opts.setup),
            workdir=opts.workdir,
            env_keys=tuple(sorted(dict(opts.env))),
            elastic=opts.elastic,
        )
        out.append(NodePlan(host, str(rank), tuple(argv), tuple(env.items()), multinode))
    return out
