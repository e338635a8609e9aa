"""`gpudeck run --pool H1,H2 --gpus N --queue [--priority P]`: start now when the pool has the GPUs
free and nothing of the pool waits ahead; else wait in the queue, with the controller (`policy
run`, a local gpudeck job named `policy`) started when none runs, so the job starts once GPUs free."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from remote_agent.names import new_job_id

from ..actions.agents import Agents
from ..actions.launch import Launched, launch
from ..actions.options import LaunchOptions, check, usage
from ..actions.placement import ask_free
from ..errors import GpudeckError
from ..session import LOCAL
from ..store import Store
from .entries import MAX_PRIORITY, Queue, QueueEntry
from .start import SHORT, fit, placed, positions

CONTROLLER = "policy"  # the name the detached controller runs under (README: Policies, Detached)
CONTROLLER_INTERVAL = "10"  # seconds between its passes: a freed GPU is taken within that


@dataclass(frozen=True)
class Queued:
    entry: QueueEntry
    ahead: int
    reason: str
    controller: str | None  # the controller job started for it, or None when one already ran


def submit(agents: Agents, store: Store | None, opts: LaunchOptions, priority: int = 0) -> Launched | Queued:
    if not opts.pool or opts.gpus is None:
        raise usage("--queue: needs --pool H1,H2,… and --gpus N (where to wait, and for what)")
    if opts.hosts:
        raise usage("--queue: the queue places the job on its pool; leave out the --host list")
    if not -MAX_PRIORITY <= priority <= MAX_PRIORITY:
        raise usage(f"--priority {priority}: from {-MAX_PRIORITY} to {MAX_PRIORITY} (higher starts first)")
    check(opts)
    queue = Queue()
    job_id = new_job_id()
    waiting = [e for e in queue.entries() if e.opts.pool == opts.pool]
    if not waiting:  # nothing ahead: start now if the GPUs are there
        hosts = fit(ask_free(agents, opts.pool), opts.pool, opts.nodes, opts.gpus.count)
        if hosts is not None:
            try:
                return launch(agents, store, placed(opts, hosts), job_id)
            except GpudeckError as exc:
                if SHORT not in str(exc):
                    raise  # taken meanwhile: it queues like any other
    entry = queue.add(job_id, opts, priority)
    ahead, reason = positions(queue.entries()).get(job_id, (0, "waiting"))
    return Queued(entry, ahead, reason, ensure_controller(agents, store))


def ensure_controller(agents: Agents, store: Store | None) -> str | None:
    """The detached controller's job id when this started it; None when one runs already."""
    jobs = agents.request(LOCAL, "jobs")["jobs"]
    if any(j.get("name") == CONTROLLER and j.get("state") in ("starting", "running") for j in jobs):
        return None
    argv = (sys.executable, "-m", "tui", "policy", "run", "--interval", CONTROLLER_INTERVAL)
    return launch(agents, store, LaunchOptions(argv=argv, host=LOCAL, name=CONTROLLER)).id
