"""How many nodes and processes a job may ask for (issue 29, finding 11): `run --nodes 100000`
forked a supervisor per node on one host, and `--nproc-per-node 99999999` left torchrun starting
for minutes. The bounds are documented in the README ("Bounds")."""

from __future__ import annotations

from ..errors import EXIT_USAGE, GpudeckError

MAX_NODES = 128  # nodes of one job, whatever its pool
MAX_NODES_PER_HOST = 16  # one host's capacity: each node is a supervisor and a torchrun of its own
MAX_NPROC_PER_NODE = 64  # processes per node: more than the biggest GPU server's GPUs


def check_node_bounds(
    nodes: int, nproc_per_node: int, host: str, hosts: tuple[str, ...], pool: tuple[str, ...]
) -> None:
    """A usage error naming the option when `nodes` or `nproc_per_node` is past a ceiling, or more
    nodes than the hosts the job may use can hold."""
    if nproc_per_node > MAX_NPROC_PER_NODE:
        raise GpudeckError(
            f"--nproc-per-node {nproc_per_node}: at most {MAX_NPROC_PER_NODE} processes per node", EXIT_USAGE
        )
    if nodes > MAX_NODES:
        raise GpudeckError(f"--nodes {nodes}: at most {MAX_NODES} nodes per job", EXIT_USAGE)
    usable = set(hosts or (host,)) | set(pool)
    capacity = len(usable) * MAX_NODES_PER_HOST
    if nodes > capacity:
        where = f"{len(usable)} host{'s' * (len(usable) != 1)}"
        raise GpudeckError(
            f"--nodes {nodes}: more than the job's {where} hold "
            f"({MAX_NODES_PER_HOST} nodes per host at most: {capacity}); add hosts with --host or --pool",
            EXIT_USAGE,
        )
