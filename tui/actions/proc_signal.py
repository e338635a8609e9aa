"""A signal to one process of a job (the process view's `x`/`i`/`X`): the agent's `signal` op, which
checks that the pid still belongs to the job's tree. Blocks (call from a worker)."""

from __future__ import annotations

from typing import Any

from .agents import Agents

SIGNAL_NAMES = ("TERM", "INT", "KILL")


def signal_process(agents: Agents, host: str, node: str, job_id: str, pid: int, signal: str) -> Any:
    if signal not in SIGNAL_NAMES:
        raise ValueError(f"signal: expected one of {', '.join(SIGNAL_NAMES)}, got {signal!r}")
    return agents.request(host, "signal", timeout=15.0, job=job_id, node=node, pid=pid, signal=signal)
