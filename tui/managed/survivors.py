"""Before a multi-node managed job goes on with a replaced node, its other nodes are stopped the
graceful way (the trainer checkpoints on the stop signal), all at once: the new job restarts the
rendezvous from that checkpoint on the same hosts plus the replacement. A node already ended, or on a
host that does not answer, is left as it is (the stop is asked again after a cut controller: it
is idempotent)."""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from remote_agent.spec import DEFAULT_GRACE

from ..actions.agents import Agents
from ..errors import GpudeckError
from .records import Managed

STOP_MARGIN = 30.0  # seconds beyond the grace for the agent to answer a stop


def stop_survivors(agents: Agents, m: Managed, nodes: list[int], bad: list[str]) -> None:
    hosts = m.node_hosts
    targets = [(hosts[i], str(i)) for i in nodes if i < len(hosts) and hosts[i] not in bad]
    if not targets:
        return
    grace = m.opts.grace if m.opts.grace is not None else DEFAULT_GRACE

    def stop(target: tuple[str, str]) -> Any:
        host, node = target
        with contextlib.suppress(GpudeckError):  # ended already, or its host went meanwhile
            agents.request(
                host, "stop", timeout=grace + STOP_MARGIN, job=m.current, node=node, reason="recovery"
            )

    with ThreadPoolExecutor(max_workers=min(16, len(targets))) as pool:
        list(pool.map(stop, targets))
