"""Proposals: the rules of policies.toml judged while the TUI is open, by the same engine as
`gpudeck policy eval|run`, in a worker every PERIOD seconds. The TUI never acts on its own: every
decision that would change a job is a proposal, shown in the header and on the job, where one key
accepts it (the resize goes through JobControl, the core `gpudeck scale` uses) and one dismisses it.
`gpudeck policy run` is what carries rules out unattended.

The memory of what was accepted (cooldowns, schedule periods) is the policy journal, the same one
`policy run` reads and writes: an accepted proposal is journaled (in a worker) before it is acted on,
so the controller, another TUI and this one restarted all see it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from textual.app import App

from remote_agent.names import new_job_id

from ..fleet import Fleet, JobModel
from ..hosts_file import HostsFileError, load_hosts
from ..policy.engine import Decision, decide
from ..policy.from_fleet import Sampler, with_costs
from ..policy.inputs import HostInstance, Inputs, JobFacts
from ..policy.journal import PolicyJournal
from ..policy.rules import Policies
from ..widgets.failures import report, say
from .base import Service

PERIOD = 5.0
SHOWN = ("scale", "propose", "refused")

Scale = Callable[..., str]  # JobControl.scale(job, count, new_id=…) → the new job's id
Move = Callable[..., str]  # JobControl.move(job, {old host: new host}, new_id=…) → the new job's id


class Proposals(Service):
    def __init__(
        self,
        app: App[Any],
        fleet: Fleet,
        policies: Policies,
        publish: Callable[[set[str]], None],
        scale: Scale,
        clock: Callable[[], float] = time.time,
        move: Move | None = None,
        journal: PolicyJournal | None = None,
    ) -> None:
        super().__init__(app)
        self.fleet, self.policies, self.publish, self.scale, self.clock = (
            fleet,
            policies,
            publish,
            scale,
            clock,
        )
        self.move = move
        self.journal = journal or PolicyJournal()
        self.sampler = Sampler(policies)
        self.dismissed: set[tuple[str, str, str]] = set()  # (rule, job id, target)
        self.period = PERIOD
        self._busy = False
        self._known: tuple[list[Any], dict[str, HostInstance]] | None = (
            None  # catalog, host instances (read once)
        )

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
        self.in_thread(
            partial(self._judge, now, views, fleet_left, fleet_burn, self.fleet.costs.currency),
            group="policy",
            exclusive=True,
            done=self._decided,
            failed=self._failed,
        )

    def _judge(
        self,
        now: float,
        views: list[JobFacts],
        fleet_left: float | None,
        fleet_burn: float | None,
        currency: str,
    ) -> list[Decision]:
        memory = self.journal.memory()  # what this TUI, another or `policy run` applied: cooldowns hold
        catalog, instances = self._reference()
        views = [replace(v, instance=instances.get(v.hosts[0])) if v.hosts else v for v in views]
        return decide(
            Inputs(
                now,
                views,
                self.policies,
                catalog=catalog,
                memory=memory,
                fleet_budget_left=fleet_left,
                fleet_burn=fleet_burn,
                currency=currency,
            )
        )

    def _reference(self) -> tuple[list[Any], dict[str, HostInstance]]:
        if self._known is None:
            from ..cost import catalog  # package data, read once, in the worker

            try:
                hosts = load_hosts()
            except HostsFileError:
                hosts = {}  # the connection service already said why
            instances = {
                name: HostInstance(
                    e.extra.get("provider"),
                    e.extra.get("instance_type"),
                    e.extra.get("region"),
                    e.extra.get("market"),
                )
                for name, e in hosts.items()
                if e.extra.get("instance_type")
            }
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
        why = (
            f"it would not restart cleanly: {restart}"
            if restart != "clean"
            else f"no connected host of type {d.to} in the job's pool (hosts.toml instance_type; `gpudeck policy run` "
            "launches one where the pool allows launch)"
            if onto is None
            else "this TUI cannot move jobs"
            if self.move is None
            else None
        )
        if why is not None:
            say(
                self.app,
                f"{d.rule}: {d.frm} → {d.to} is yours to make ({why}): {d.reason}",
                "proposal",
                timeout=10,
            )
            self.dismiss(job.id)
            return None
        assert onto is not None and self.move is not None
        old, move, new_id = next(iter(job.nodes.values())).host, self.move, new_job_id()
        self.dismiss(job.id)

        def act() -> None:
            say(
                self.app,
                f"{d.rule}: moving {job.name or job.id} from {old} to {onto} ({d.to}); the instance it "
                "leaves keeps running (`gpudeck cloud stop ID`)",
                "proposal",
                timeout=10,
            )
            move(job, {old: onto}, new_id=new_id)

        self._journaled(d, new_id, act)
        return new_id

    def _bigger_host(self, job: JobModel, d: Decision) -> str | None:
        """The first host of the job's pool (the rule's, else one holding all its hosts) of the type."""
        _, instances = self._known or ([], {})
        hosts = {n.host for n in job.nodes.values()}
        rule = next((r for r in self.policies.rules if r.name == d.rule), None)
        pool = (
            self.policies.pools.get(rule.pool)
            if rule is not None and rule.pool
            else next((p for p in self.policies.pools.values() if hosts and hosts <= set(p.hosts)), None)
        )
        # one that answers now (as `policy run` asks the agents)
        return next(
            (
                h
                for h in (pool.hosts if pool else ())
                if h not in hosts
                and instances.get(h) is not None
                and instances[h].instance_type == d.to
                and (up := self.fleet.hosts.get(h)) is not None
                and up.up
            ),
            None,
        )

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
        self.dismiss(job.id)
        new_id = new_job_id()
        self._journaled(d, new_id, lambda: self.scale(job, str(d.to), new_id=new_id))
        return new_id

    def _journaled(self, d: Decision, new_id: str, act: Callable[[], object]) -> None:
        """Journal the accepted decision (a worker: it is file IO), then act; nothing is done when it
        cannot be journaled (a decision acted on must be in the memory every reader shares)."""
        write = partial(self.journal.write, self.clock(), d, "applied", new_job=new_id, by="tui")
        self.in_thread(
            write,
            group="policy-journal",
            done=lambda _record: act(),
            failed=lambda exc: report(self.app, f"{d.rule}: not applied: cannot journal it", exc),
        )
