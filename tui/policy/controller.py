"""`gpudeck policy run`: each pass observes the live jobs, asks the engine, applies each `scale`
decision through the core action `gpudeck scale` uses, and journals every decision that is not
`none` with its inputs and outcome. Proposals and refusals are journaled once per job and target,
not on every pass.

Capacity: a resize runs on the job's own hosts (restart mode places nodes round-robin on them).
Launching cloud capacity for a pool is an injected capability (`launch`), absent until the clouds
feature provides one: a pool that allows `launch` is told so in the outcome.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..actions.find import Job
from ..errors import GpudeckError
from .engine import Decision, decide
from .inputs import Inputs
from .journal import PolicyJournal
from .observe import Observer
from .rules import Policies

RETRY_AFTER = 300.0  # seconds before a failed resize of a job name by a rule is tried again

Resize = Callable[[Job, int], str]  # (job, new count) → the new job's id; raises GpudeckError
Launch = Callable[[str, int], list[str]]  # (pool, hosts wanted) → host names; None: no clouds yet


@dataclass
class Controller:
    jobs: Callable[[], list[Job]]
    observer: Observer
    policies: Policies
    journal: PolicyJournal
    resize: Resize
    catalog: list[Any] = field(default_factory=list)
    clock: Callable[[], float] = time.time
    launch: Launch | None = None
    said: set[tuple[str, str, str, Any]] = field(default_factory=set)  # (rule, job id, action, to) journaled
    failed: dict[tuple[str, str], float] = field(default_factory=dict)  # (rule, job name) → when

    def __post_init__(self) -> None:
        # what an earlier run already proposed or refused is not said again
        for r in self.journal.records():
            job = r.get("job") if isinstance(r.get("job"), dict) else {}
            if r.get("outcome") in ("proposed", "refused"):
                self.said.add((str(r.get("rule")), str(job.get("id")), str(r.get("action")), _hashable(r.get("to"))))

    def evaluate(self, now: float | None = None) -> tuple[list[Decision], dict[str, Job], list[str]]:
        """What every rule decides for every live job (no action taken)."""
        # A watched run (gpudeck watch) was not started by gpudeck: no rule may resize it.
        live = [j for j in self.jobs() if not j.ended and not j.first.get("watch")]
        problems = self.observer.sync(live)
        real = self.clock()
        views = [self.observer.view(j, real) for j in live]
        inputs = Inputs(real if now is None else now, views, self.policies, catalog=self.catalog,
                        memory=self.journal.memory(), observed_until=None if now is None else real)
        return decide(inputs), {j.id: j for j in live}, problems

    def tick(self) -> list[dict[str, Any]]:
        """One pass: the journal records written (each decision that is not `none`)."""
        decisions, jobs, _ = self.evaluate()
        now = self.clock()
        written = []
        resized: set[str] = set()
        for d in decisions:
            if d.action == "none" or d.job_id in resized:
                continue
            if d.action == "scale":
                if now - self.failed.get((d.rule, d.job_name), -RETRY_AFTER) < RETRY_AFTER:
                    continue
                written.append(self._apply(d, jobs[d.job_id], now))
                resized.add(d.job_id)
                continue
            key = (d.rule, d.job_id, d.action, _hashable(d.to))
            if key in self.said:
                continue
            self.said.add(key)
            written.append(self.journal.write(now, d, "proposed" if d.action == "propose" else "refused"))
        return written

    def _apply(self, d: Decision, job: Job, now: float) -> dict[str, Any]:
        pool = self.policies.pools.get(next((r.pool or "" for r in self.policies.rules if r.name == d.rule), ""))
        extra: dict[str, Any] = {}
        if pool is not None and pool.launch and self.launch is None:
            extra["capacity"] = "on the job's own hosts: launching cloud capacity is not available yet"
        try:
            new_id = self.resize(job, int(d.to))
        except GpudeckError as exc:
            self.failed[(d.rule, d.job_name)] = now
            return self.journal.write(now, d, "failed", error=str(exc), **extra)
        return self.journal.write(self.clock(), d, "applied", new_job=new_id, **extra)


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, type(None))) else repr(value)


def run_forever(controller: Controller, interval: float, say: Callable[[dict[str, Any]], None],
                once: bool = False, stop: threading.Event | None = None) -> None:
    """Pass after pass until `stop` is set; a pass under way is finished first, so a resize is never
    cut between its stop and its relaunch."""
    stop = stop or threading.Event()
    while not stop.is_set():
        for record in controller.tick():
            say(record)
        if once:
            return
        stop.wait(interval)
