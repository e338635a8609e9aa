"""Starting a job's nodes all at once (a launch, a resize's relaunch): each agent's `launch` or
`restart` answers once its supervisor has started the command, so one after the other a job of N
nodes waited N supervisor starts (~0.3-0.5 s each on a loaded machine) before its last node even
began to import torch. Sent together, those waits overlap; a node that fails to start still leaves
no other node of the job running (the ones that started are killed)."""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..errors import GpudeckError
from .agents import Agents

START_TIMEOUT = 60.0  # launch.LAUNCH_TIMEOUT: a supervisor that has not started the command by then is stuck


@dataclass(frozen=True)
class Start:
    host: str
    node: str
    job: str  # the id the node runs as (what a kill names when another node fails)
    op: str  # "launch" or "restart"
    args: dict[str, Any] = field(default_factory=dict)


class NodeStartFailed(GpudeckError):
    """One node did not start (the first in the job's order that failed); the others are killed."""

    def __init__(self, start: Start, cause: GpudeckError) -> None:
        super().__init__(str(cause), cause.code)
        self.start, self.cause = start, cause


def start_all(agents: Agents, starts: list[Start], together: bool = True) -> list[Any]:
    """Each start's answer, in order, all sent at once; `together=False`: one after the other, in
    order, up to the first that fails (an elastic launch: torchrun's c10d rendezvous numbers the
    nodes of one host by their torchrun's pid, so node 0 must start first to be rank 0, the rank
    whose output carries the job's metrics)."""

    def one(s: Start) -> Any:
        try:
            return agents.request(s.host, s.op, timeout=START_TIMEOUT, **s.args)
        except GpudeckError as exc:
            return exc

    if len(starts) == 1 or not together:
        answers = []
        for s in starts:
            answers.append(one(s))
            if isinstance(answers[-1], GpudeckError):
                break
    else:
        with ThreadPoolExecutor(max_workers=min(16, len(starts))) as pool:
            answers = list(pool.map(one, starts))
    failed = next(
        ((s, a) for s, a in zip(starts, answers, strict=False) if isinstance(a, GpudeckError)), None
    )
    if failed is None:
        return answers
    for s, a in zip(starts, answers, strict=False):
        if not isinstance(a, GpudeckError):
            with contextlib.suppress(GpudeckError):
                agents.request(s.host, "kill", timeout=START_TIMEOUT, job=s.job, node=s.node)
    raise NodeStartFailed(*failed)
