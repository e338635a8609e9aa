"""The TUI's engine inputs, from the live Fleet model (app thread): what each job printed last and its
hosts' GPU means, sampled with the time on every pass, so a rule's `for` can be judged in the TUI
without a second tail of the journals. Pure data in, data out; the service calls it."""

from __future__ import annotations

from dataclasses import replace

from ..fleet import Fleet
from ..fleet.costs import CostBoard
from .inputs import JobFacts, Point, append_bounded
from .rules import HOST_METRICS, Policies

KEEP_MARGIN = 120.0


class Sampler:
    def __init__(self, policies: Policies) -> None:
        self.wanted = {r.metric for r in policies.rules if r.metric and r.metric not in HOST_METRICS}
        self.keep = max((r.hold for r in policies.rules), default=0.0) + KEEP_MARGIN
        self.metrics: dict[str, dict[str, list[Point]]] = {}
        self.gpus: dict[str, dict[tuple[str, str], list[Point]]] = {}

    def sample(self, fleet: Fleet, now: float) -> list[JobFacts]:
        """One JobFacts per live job, after adding this moment's values to its series."""
        views = []
        # A watched run (gpudeck watch) was not started by gpudeck: no rule may resize it.
        live = {job_id: job for job_id, job in fleet.jobs.items() if not job.ended and job.watch is None}
        for gone in set(self.metrics) - set(live):
            self.metrics.pop(gone, None)
            self.gpus.pop(gone, None)
        for job_id, job in live.items():
            metrics = self.metrics.setdefault(job_id, {})
            for name in self.wanted:
                value = job.last.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    append_bounded(metrics.setdefault(name, []), Point(now, float(value)), self.keep)
            gpus = self.gpus.setdefault(job_id, {})
            by_host: dict[str, list[tuple[float | None, float | None]]] = {}
            for key, sample in job.gpu_latest.items():
                mem = (
                    100.0 * sample.mem_used_mib / sample.mem_total_mib
                    if sample.mem_used_mib is not None and sample.mem_total_mib
                    else None
                )
                by_host.setdefault(job.gpu_host.get(key, ""), []).append((sample.util, mem))
            for host, readings in by_host.items():
                for i, metric in enumerate(("gpu_util", "gpu_mem")):
                    values = [v for r in readings if (v := r[i]) is not None]
                    if values:
                        append_bounded(
                            gpus.setdefault((host, metric), []),
                            Point(now, sum(values) / len(values)),
                            self.keep,
                        )
            hosts = tuple(dict.fromkeys(n.host for n in job.nodes.values()))
            views.append(
                JobFacts(
                    id=job_id,
                    name=job.name or job_id,
                    nodes=len(job.nodes),
                    hosts=hosts,
                    metrics={k: list(v) for k, v in metrics.items()},
                    gpu={k: list(v) for k, v in gpus.items()},
                )
            )
        return views


def with_costs(views: list[JobFacts], board: CostBoard) -> tuple[list[JobFacts], float | None, float | None]:
    """The cost board's figures for the budget checks, in the board's currency (the engine is told which):
    each job's burn per node and budget left, and the fleet's day budget left and burn."""
    out = []
    for v in views:
        c = board.jobs.get(v.id)
        burn = c.burn / v.nodes if c is not None and c.burn is not None and v.nodes else None
        left = (
            c.budget - c.accrued if c is not None and c.budget is not None and c.accrued is not None else None
        )
        out.append(replace(v, burn_per_node=burn, budget_left=left))
    fleet_left = (
        board.daily_budget - board.today
        if board.daily_budget is not None and board.today is not None
        else None
    )
    return out, fleet_left, board.burn
