"""The worker's command line and environment when torchrun would only start one worker after a
static rendezvous: what gpudeck's restart-mode nodes run (`--nproc-per-node=1`, no `--rdzv-*`).

torchrun then adds nothing the worker needs but its environment: the rendezvous is the process
group's own (rank 0 hosts the store at the master port, the others connect to it), a stop signal
reaches the worker without forwarding, and there are no restarts to manage. What it costs is a
second `import torch` per node (~1.5 s of CPU each, measured in bench/bench_scale.py), on the path
of every resize. So trainer.torchrun execs the worker in its own place with that environment.
Pure and torch-free: the launcher must not import torch to decide.
"""

from __future__ import annotations

import os
import re

# exactly the flags nodes.static_flags writes, each once, as `--flag=value`
_STATIC = ("--nnodes", "--node-rank", "--nproc-per-node", "--master-addr", "--master-port")
_INT = re.compile(r"[0-9]{1,6}")


def direct_worker(
    argv: list[str], environ: dict[str, str], python: str
) -> tuple[list[str], dict[str, str]] | None:
    """(argv, env) of the one worker of `torchrun ARGV`, or None when ARGV asks for more than a
    static one-worker rendezvous running `-m trainer` (then torchrun itself runs it)."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        name, eq, value = argv[i].partition("=")
        if not eq or name not in _STATIC or name in flags:
            return None
        flags[name] = value
        i += 1
    rest = argv[i:]
    if len(flags) != len(_STATIC) or rest[:2] != ["-m", "trainer"]:
        return None
    numbers = [flags[k] for k in ("--nnodes", "--node-rank", "--nproc-per-node", "--master-port")]
    if not all(_INT.fullmatch(v) for v in numbers):
        return None  # a range (elastic), `auto`, or anything else torchrun should judge
    nnodes, rank, nproc, port = map(int, numbers)
    if nproc != 1 or not 0 <= rank < nnodes or not 0 < port < 65536 or not flags["--master-addr"]:
        return None
    world = str(nnodes)
    env = dict(environ)
    # what torchrun's LocalElasticAgent gives each worker (torch 2.13), for one worker per node
    env.update(
        RANK=str(rank),
        LOCAL_RANK="0",
        GROUP_RANK=str(rank),
        ROLE_RANK=str(rank),
        ROLE_NAME="default",
        LOCAL_WORLD_SIZE="1",
        WORLD_SIZE=world,
        GROUP_WORLD_SIZE=world,
        ROLE_WORLD_SIZE=world,
        MASTER_ADDR=flags["--master-addr"],
        MASTER_PORT=str(port),
        TORCHELASTIC_RESTART_COUNT="0",
        TORCHELASTIC_MAX_RESTARTS="0",
        TORCHELASTIC_RUN_ID="none",
        TORCHELASTIC_USE_AGENT_STORE="False",  # rank 0 hosts the store itself: no agent holds one
        TORCH_NCCL_ASYNC_ERROR_HANDLING=environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
    )
    # torchrun runs a module as `python -u -m MODULE` (PYTHON_EXEC overrides the interpreter)
    exe = environ.get("PYTHON_EXEC") or python
    return [exe, "-u", *rest], env


def exec_worker(command: list[str], env: dict[str, str]) -> None:
    """Become the worker: same pid, so the supervisor's stop signal reaches the trainer itself."""
    os.execvpe(command[0], command, env)
