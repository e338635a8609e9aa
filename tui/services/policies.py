"""Proposals: the rules of policies.toml judged while the TUI is open, by the same engine as
`gpudeck policy eval|run`, in a worker every PERIOD seconds. The TUI never acts on its own: every
decision that would change a job is a proposal, shown in the header and on the job, where one key
accepts it (the resize goes through JobControl, the core `gpudeck scale` uses) and one dismisses it.
`gpudeck policy run` is what carries rules out unattended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from textual.app import App

from ..fleet import Fleet, JobModel
from ..hosts_file import HostsFileError, load_hosts
from ..policy.engine import Decision, decide
from ..policy.from_fleet import Sampler, with_costs
from ..policy.inputs import Applied, Inputs, Instance, JobView
from ..policy.rules import Policies
from ..widgets.failures import report, say
from .base import Service

PERIOD = 5.0
SHOWN = ("scale", "propose", "refused")

Scale = Callable[[JobModel, str], str]  # JobControl.scale: (job, count) → the new job's id


class Proposals(Service):
    def __init__(self, app: App[Any], fleet: Fleet, policies: Policies, publish: Callable[[set[str]], None],
                 scale: Scale, clock: Callable[[], float] = time.time) -> None:
        super().__init__(app)
        self.fleet, self.policies, self.publish, self.scale, self.clock = fleet, policies, publish, scale, clock
        self.sampler = Sampler(policies)
        self.memory: dict[tuple[str, str], Applied] = {}  # what was accepted here: cooldowns hold
        self.dismissed: set[tuple[str, str, str]] = set()  # (rule, job id, target)
        self.period = PERIOD
        self._busy = False
        self._known: tuple[list[Any], dict[str, Instance]] | None = None  # catalog, host instances (read once)

    def start(self) -> None:
        if self.policies.rules:
            self.app.set_interval(self.period, self.tick)

    def tick(self) -> None:
        """On the app thread: sample the fleet, then judge in a worker (the catalog and hosts.toml are IO)."""
        if self._busy or not self.policies.rules:
            return
        now = self.clock()
        views, fleet_left, fleet_burn = with_costs(self.sampler.sample(self.fleet, now), self.fleet.costs)
        self._busy = True
        self.in_thread(partial(self._judge, now, views, dict(self.memory), fleet_left, fleet_burn,
                               self.fleet.costs.currency), group="policy",
                       exclusive=True, done=self._decided, failed=self._failed)

    def _judge(self, now: float, views: list[JobView], memory: dict[tuple[str, str], Applied],
               fleet_left: float | None, fleet_burn: float | None, currency: str) -> list[Decision]:
        catalog, instances = self._reference()
        views = [replace(v, instance=instances.get(v.hosts[0])) if v.hosts else v for v in views]
        return decide(Inputs(now, views, self.policies, catalog=catalog, memory=memory, fleet_budget_left=fleet_left,
                             fleet_burn=fleet_burn, currency=currency))

    def _reference(self) -> tuple[list[Any], dict[str, Instance]]:
        if self._known is None:
            from ..cost import catalog  # package data, read once, in the worker

            try:
                hosts = load_hosts()
            except HostsFileError:
                hosts = {}  # the connection service already said why
            instances = {name: Instance(e.extra.get("provider"), e.extra.get("instance_type"), e.extra.get("region"),
                                        e.extra.get("market")) for name, e in hosts.items() if e.extra.get("instance_type")}
            self._known = (catalog.entries(), instances)
        return self._known

    def _decided(self, decisions: list[Decision]) -> None:
        self._busy = False
        proposals: dict[str, list[Decision]] = {}
        for d in decisions:
            if d.action in SHOWN and (d.rule, d.job_id, str(d.to)) not in self.dismissed:
                proposals.setdefault(d.job_id, []).append(d)
        if proposals != self.fleet.proposals:
            self.fleet.proposals = proposals
            self.publish({"policy"})

    def _failed(self, exc: BaseException) -> None:
        self._busy = False
        report(self.app, "rules", exc, "warning")

    # -- the keys ----------------------------------------------------------------------------------

    def first(self, job_id: str) -> Decision | None:
        found = self.fleet.proposals.get(job_id)
        return found[0] if found else None

    def dismiss(self, job_id: str) -> None:
        d = self.first(job_id)
        if d is None:
            return
        self.dismissed.add((d.rule, d.job_id, str(d.to)))
        self.fleet.proposals = {k: [p for p in v if p is not d] for k, v in self.fleet.proposals.items()}
        self.fleet.proposals = {k: v for k, v in self.fleet.proposals.items() if v}
        self.publish({"policy"})

    def accept(self, job: JobModel) -> str | None:
        """Carry out the job's first proposal; the new job's id when it resizes."""
        d = self.first(job.id)
        if d is None:
            return None
        if d.action == "refused":  # the budget said no, a bigger type as much as more nodes
            say(self.app, f"{d.rule}: {d.reason}", "proposal refused", "warning", timeout=10)
            return None
        if d.kind == "vertical":
            say(self.app, f"{d.rule}: a new instance type is yours to make ({d.frm} → {d.to}): {d.reason}",
                "proposal", timeout=10)
            self.dismiss(job.id)
            return None
        self.memory[(d.rule, d.job_name)] = Applied(self.clock(), d.to, d.period)
        self.dismiss(job.id)
        return self.scale(job, str(d.to))
