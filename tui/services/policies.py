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
Move = Callable[[JobModel, dict[str, str]], str]  # JobControl.move: (job, {old host: new host}) → the new job's id


class Proposals(Service):
    def __init__(self, app: App[Any], fleet: Fleet, policies: Policies, publish: Callable[[set[str]], None],
                 scale: Scale, clock: Callable[[], float] = time.time, move: Move | None = None) -> None:
        super().__init__(app)
        self.fleet, self.policies, self.publish, self.scale, self.clock = fleet, policies, publish, scale, clock
        self.move = move
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

    def _move(self, job: JobModel, d: Decision) -> str | None:
        """A bigger type, accepted: the job restarts from its checkpoint on a host of that type in its
        pool, where it restarts cleanly (as `policy run` applies it); else it is said why, and dismissed."""
        restart = d.inputs.get("restart")
        onto = self._bigger_host(job, d)
        why = (f"it would not restart cleanly: {restart}" if restart != "clean" else
               f"no connected host of type {d.to} in the job's pool (hosts.toml instance_type; `gpudeck policy run` "
               "launches one where the pool allows launch)" if onto is None else
               "this TUI cannot move jobs" if self.move is None else None)
        if why is not None:
            say(self.app, f"{d.rule}: {d.frm} → {d.to} is yours to make ({why}): {d.reason}", "proposal", timeout=10)
            self.dismiss(job.id)
            return None
        assert onto is not None and self.move is not None
        old = next(iter(job.nodes.values())).host
        self.memory[(d.rule, d.job_name)] = Applied(self.clock(), d.to, d.period)
        self.dismiss(job.id)
        say(self.app, f"{d.rule}: moving {job.name or job.id} from {old} to {onto} ({d.to}); the instance it leaves "
            "keeps running (`gpudeck cloud stop ID`)", "proposal", timeout=10)
        return self.move(job, {old: onto})

    def _bigger_host(self, job: JobModel, d: Decision) -> str | None:
        """The first host of the job's pool (the rule's, else one holding all its hosts) of the type."""
        _, instances = self._known or ([], {})
        hosts = {n.host for n in job.nodes.values()}
        rule = next((r for r in self.policies.rules if r.name == d.rule), None)
        pool = (self.policies.pools.get(rule.pool) if rule is not None and rule.pool else
                next((p for p in self.policies.pools.values() if hosts and hosts <= set(p.hosts)), None))
        # one that answers now (as `policy run` asks the agents)
        return next((h for h in (pool.hosts if pool else ()) if h not in hosts and instances.get(h) is not None
                     and instances[h].instance_type == d.to and (up := self.fleet.hosts.get(h)) is not None and up.up),
                    None)

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
            return self._move(job, d)
        self.memory[(d.rule, d.job_name)] = Applied(self.clock(), d.to, d.period)
        self.dismiss(job.id)
        return self.scale(job, str(d.to))
