"""`gpudeck policy run`: each pass observes the live jobs, asks the engine, applies each `scale`
decision through the core action `gpudeck scale` uses, and journals every decision that is not
`none` with its inputs and outcome. Proposals and refusals are journaled once per job and target,
not on every pass.

Capacity: a scale up goes where `gpudeck scale` puts it (the job's pool, free GPUs first). When the
rule's pool has no host with a free GPU and allows `launch`, the injected `capacity` launches one
instance per new node (after the budgets said they can pay an hour of it), adds it to the pool and
scales onto it; the launch is journaled (`launched`) before the resize's own record.

The fleet's daily budget (`fleet`, asked only when some rule wants to grow a job or propose a bigger
type: it costs a `cost` report) is an engine input: a scale up it cannot pay — applied or only
proposed (`auto = false`) — and a vertical proposal once the budget is spent are journaled as refused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from remote_agent.names import new_job_id

from ..actions.find import Job
from ..cost.catalog import CatalogEntry
from ..errors import GpudeckError
from .capacity import Capacity, CapacityLaunched, has_free_host, launch_refusal, launch_token, pool_of
from .engine import Decision, decide
from .inflight import InFlight, LaunchInFlight
from .inputs import Inputs
from .journal import PolicyJournal
from .observe import Observer
from .queue_capacity import QueueCapacity
from .resume import resume_interrupted
from .rules import Policies, PolicyError

RETRY_AFTER = 300.0  # seconds before a failed resize of a job name by a rule is tried again

Resize = Callable[
    [Job, int, tuple[str, ...], str], str
]  # (job, new count, onto hosts, the new job's id) → the new job's id; GpudeckError
# (job, {old host: new host}, the new type's GPUs per node or None) → the new job's id; GpudeckError
Move = Callable[[Job, dict[str, str], int | None], str]
JoinPool = Callable[[str, str], None]  # (pool, host): write the host into policies.toml's pool; PolicyError
FleetBudget = Callable[[], tuple[float | None, float | None]]  # → (day budget left, fleet burn per hour)


@dataclass
class Controller:
    jobs: Callable[[], list[Job]]
    observer: Observer
    policies: Policies
    journal: PolicyJournal
    resize: Resize
    catalog: list[Any] = field(default_factory=list)
    clock: Callable[[], float] = time.time
    capacity: Capacity | None = None
    fleet: FleetBudget | None = None  # None: no [cost] daily_budget
    currency: str = "USD"  # [cost] currency: the unit of every budget figure and launch price
    join_pool: JoinPool | None = None  # None: a launched host joins the pool for this run only
    move: Move | None = None  # None: vertical decisions stay proposals
    host_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # hosts.toml: instance types
    said: set[tuple[str, str, str, Any]] = field(default_factory=set)  # (rule, job id, action, to) journaled
    failed: dict[tuple[str, str], float] = field(default_factory=dict)  # (rule, job name) → when
    fleet_figures: tuple[float | None, float | None] = (None, None)  # the last pass's (day budget left, burn)
    resumed: bool = False  # the decisions an earlier controller left open were finished (resume.py)
    # The queue's pass (tui/queue/start.py): first the starts a killed controller left half done
    # (given the live jobs' ids), then the queued jobs whose GPUs are free; records it journals.
    queue_recover: Callable[[set[str]], list[dict[str, Any]]] | None = None
    queue_pass: Callable[[], list[dict[str, Any]]] | None = None
    managed_pass: Callable[[], list[dict[str, Any]]] | None = None  # tui/managed/recover.py
    # capacity for the queue (queue_capacity.py): finished launches join before the queue's pass,
    # new launches and idle releases after it
    queue_capacity: QueueCapacity | None = None
    # the launches under way (inflight.py); inline (the default, and `policy run --once`): a pass
    # waits for its launches
    flights: InFlight = field(default_factory=lambda: InFlight(inline=True))
    # a rule's launches under way: token → (decision, pool, rank, capacity figures); those no decision
    # asked for in a pass (the rule stopped deciding so) are collected at its end (_adopt_booted)
    booting: dict[str, tuple[Decision, Any, int, dict[str, Any]]] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        # what an earlier run already proposed or refused is not said again
        for r in self.journal.records():
            job = j if isinstance(j := r.get("job"), dict) else {}
            if r.get("outcome") in ("proposed", "refused"):
                self.said.add(
                    (str(r.get("rule")), str(job.get("id")), str(r.get("action")), _hashable(r.get("to")))
                )

    def evaluate(self, now: float | None = None) -> tuple[list[Decision], dict[str, Job], list[str]]:
        """What every rule decides for every live job (no action taken)."""
        # A watched run (gpudeck watch) was not started by gpudeck: no rule may resize it.
        live = [j for j in self.jobs() if not j.ended and not j.first.get("watch")]
        problems = self.observer.sync(live)
        real = self.clock()
        views = [self.observer.view(j, real) for j in live]
        inputs = Inputs(
            real if now is None else now,
            views,
            self.policies,
            catalog=self.catalog,
            memory=self.journal.memory(),
            observed_until=None if now is None else real,
            currency=self.currency,
        )
        decisions = decide(inputs)
        # proposals are asked about too: one the budget cannot pay is refused, not proposed
        if self.fleet is not None and any(_costs_more(d) for d in decisions):
            try:
                left, burn = self.fleet()
            except GpudeckError as exc:
                problems.append(f"policy: the fleet's daily budget: {exc}")
                left, burn = None, None
            if left is not None:
                self.fleet_figures = (left, burn)
                decisions = decide(replace(inputs, fleet_budget_left=left, fleet_burn=burn))
        return decisions, {j.id: j for j in live}, problems

    def tick(self) -> list[dict[str, Any]]:
        """One pass: the journal records written (each decision that is not `none`); the first pass
        first finishes any resize an earlier controller journaled as `intent` and never closed."""
        written = []
        self.touched = set()
        if not self.resumed:
            self.resumed = True
            written.extend(resume_interrupted(self.journal, self.jobs(), self.resize, self.clock()))
            if self.queue_recover is not None:
                live = {j.id for j in self.jobs()}
                written.extend(self.journal.note(r) for r in self.queue_recover(live))
        if self.managed_pass is not None:  # first: a lost job's replacement before the queue's starts
            try:
                written.extend(self.journal.note(r) for r in self.managed_pass())
            except GpudeckError as exc:
                written.append(
                    self.journal.note(
                        {
                            "t": round(self.clock(), 3),
                            "kind": "managed",
                            "outcome": "error",
                            "error": str(exc),
                        }
                    )
                )
        if self.queue_capacity is not None:
            written.extend(self._guarded(self.queue_capacity.before))
        if self.queue_pass is not None:
            try:
                written.extend(self.journal.note(r) for r in self.queue_pass())
            except GpudeckError as exc:  # a pool none of whose hosts answers: the rules still run
                written.append(
                    self.journal.note(
                        {"t": round(self.clock(), 3), "kind": "queue", "outcome": "error", "error": str(exc)}
                    )
                )
        if self.queue_capacity is not None:
            written.extend(self._guarded(self.queue_capacity.after))
        decisions, jobs, _ = self.evaluate()
        now = self.clock()
        resized: set[str] = set()
        for d in decisions:
            if d.action == "none" or d.job_id in resized:
                continue
            if d.action == "scale":
                if now - self.failed.get((d.rule, d.job_name), -RETRY_AFTER) < RETRY_AFTER:
                    continue
                written.extend(self._apply(d, jobs[d.job_id], now, jobs))
                resized.add(d.job_id)
                continue
            key = (d.rule, d.job_id, d.action, _hashable(d.to))
            if key in self.said:
                continue
            self.said.add(key)
            written.append(self.journal.write(now, d, "proposed" if d.action == "propose" else "refused"))
        written.extend(self._adopt_booted())
        return written

    def _adopt_booted(self) -> list[dict[str, Any]]:
        """A rule's launch that finished while no decision asks for it any more (the metric fell
        meanwhile): the instance joins its pool as free capacity (journaled `launched`), so the next
        scale up or queued job uses it and no second one is launched; a failure is journaled."""
        out: list[dict[str, Any]] = []
        if self.capacity is None:
            return out
        for token, (d, pool, rank, extra) in list(self.booting.items()):
            if token in self.touched or token not in self.flights.work or self.flights.running(token):
                continue
            del self.booting[token]
            try:
                launched = self.flights.call(token, self.capacity.launch, pool, token)
            except GpudeckError as exc:
                out.append(
                    self.journal.write(self.clock(), d, "failed", error=str(exc), token=token, **extra)
                )
                continue
            note = "the rule no longer asks for it: it joins the pool as free capacity"
            out.append(self._joined(d, pool, launched, rank, token, extra, note=note))
        return out

    def _joined(
        self,
        d: Decision,
        pool: Any,
        launched: CapacityLaunched,
        rank: int,
        token: str,
        extra: dict[str, Any],
        **more: Any,
    ) -> dict[str, Any]:
        """A launched instance joins its pool from now on (a pool rule still matches the grown job),
        journaled `launched`."""
        known = self.policies.pools.get(pool.name, pool)
        self.policies.pools[pool.name] = replace(known, hosts=(*known.hosts, launched.host))
        joined = self._join(pool.name, launched.host)
        return self.journal.write(
            self.clock(),
            d,
            "launched",
            host=launched.host,
            instance=launched.instance,
            pool=pool.name,
            rank=rank,
            token=token,
            **more,
            **joined,
            **extra,
        )

    def _guarded(self, step: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """The queue's capacity step's records (journaled by it); a failure is one record, and the
        rules still run."""
        try:
            return step()
        except GpudeckError as exc:
            error = {"t": round(self.clock(), 3), "kind": "queue", "outcome": "error", "error": str(exc)}
            return [self.journal.note(error)]

    def _apply(self, d: Decision, job: Job, now: float, live: dict[str, Job]) -> list[dict[str, Any]]:
        """The records written: the launches (if any) and the decision's outcome."""
        steps: list[dict[str, Any]] = []
        try:
            if d.kind == "vertical":
                return self._move(d, job, now, live, steps)
            steps.append(self._resize(d, job, now, steps))
        except LaunchInFlight:
            pass  # its instances boot; the decision comes again at the next pass and finds them
        return steps

    def _move(
        self, d: Decision, job: Job, now: float, live: dict[str, Job], steps: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """A bigger type, applied: the job restarts from its checkpoint on a host of that type in its
        pool — one there that answers, else (the pool allows `launch`) a new on-demand instance of
        that type. Neither: the decision stays a proposal, journaled once with the reason."""
        rule = next((r for r in self.policies.rules if r.name == d.rule), None)
        pool = pool_of(rule, job, self.policies)
        old = str(job.first.get("host"))
        bigger = [
            h
            for h in (pool.hosts if pool else ())
            if h != old and (self.host_settings.get(h) or {}).get("instance_type") == d.to
        ]
        free = (
            dict(self.capacity.free(bigger))
            if bigger and self.capacity is not None
            else dict.fromkeys(bigger, 0)
        )
        # as `gpudeck scale` places a node: a host that answered, the most free GPUs first, then pool order
        answered = [h for h in bigger if h in free]
        onto = max(answered, key=lambda h: (free[h], -answered.index(h))) if answered else None
        extra: dict[str, Any] = {
            "capacity": {"pool": pool.name if pool else None, "of_type": bigger, "free_gpus": free}
        }
        can_launch = pool is not None and pool.launch and self.capacity is not None
        if onto is None and can_launch and self.move is not None:
            assert pool is not None
            try:  # node 0 of the job, on the bigger type, on-demand (what restarts cleanly)
                refused, hosts = self._launch(
                    d, replace(pool, instance_type=str(d.to), spot=False), [0], now, extra, steps
                )
            except GpudeckError as exc:
                self.failed[(d.rule, d.job_name)] = now
                return [*steps, self.journal.write(now, d, "failed", error=str(exc), **extra)]
            if refused is not None:
                return [*steps, refused]
            onto = hosts[0]
        if onto is None or self.move is None:
            where = f"pool {pool.name}" if pool else "no pool holds the job's host"
            why = (
                "`policy run` here does not move jobs"
                if self.move is None
                else f"no host of type {d.to} answered in {where}, and it does not allow launch"
            )
            key = (d.rule, d.job_id, "propose", _hashable(d.to))
            if key in self.said:
                return []
            self.said.add(key)
            return [
                self.journal.write(
                    now,
                    replace(d, action="propose", reason=f"{d.reason}; not applied: {why}"),
                    "proposed",
                    **extra,
                )
            ]
        extra["moved"] = {"from": old, "to": onto}
        gpus = _gpus_of(self.catalog, str(d.to))
        extra["nproc_per_node"] = gpus  # the processes per node on the new type (None: not in the catalog)
        try:
            new_id = self.move(job, {old: onto}, gpus)
        except GpudeckError as exc:
            self.failed[(d.rule, d.job_name)] = now
            return [*steps, self.journal.write(now, d, "failed", error=str(exc), **extra)]
        extra["old_instance"] = self._release(old, job, rule.old_instance if rule else "keep", live)
        return [*steps, self.journal.write(self.clock(), d, "applied", new_job=new_id, **extra)]

    def _release(self, host: str, job: Job, how: str, live: dict[str, Job]) -> dict[str, Any]:
        """What became of the instance the job moved off: stopped (or terminated, as the rule says)
        when it is a cloud instance tagged gpudeck-managed that runs no other job; else kept, and why."""
        settings = self.host_settings.get(host) or {}
        out: dict[str, Any] = {"host": host, "instance": settings.get("instance_id"), "action": "kept"}
        others = sorted(
            j.id for j in live.values() if j.id != job.id and any(n.get("host") == host for n in j.nodes)
        )
        if how == "keep":
            out["why"] = 'old_instance = "keep"'
        elif not settings.get("provider") or not settings.get("instance_id"):
            out["why"] = "not a cloud instance (no provider and instance_id in hosts.toml)"
        elif others:
            out["why"] = f"other jobs run there ({', '.join(others)})"
        elif self.capacity is None:
            out["why"] = "no cloud access here"
        else:
            try:
                self.capacity.release(settings, how)
                out["action"] = "terminated" if how == "terminate" else "stopped"
            except GpudeckError as exc:
                out["why"] = str(exc)
        return out

    def _resize(self, d: Decision, job: Job, now: float, steps: list[dict[str, Any]]) -> dict[str, Any]:
        rule = next((r for r in self.policies.rules if r.name == d.rule), None)
        pool = pool_of(rule, job, self.policies)
        onto: tuple[str, ...] = ()
        extra: dict[str, Any] = {}
        try:
            if pool is not None and pool.launch and _grows(d) and self.capacity is not None:
                free = dict(self.capacity.free(list(pool.hosts)))
                extra["capacity"] = {"pool": pool.name, "free_gpus": free}
                if not has_free_host(free):
                    ranks = list(range(len(job.nodes), int(d.to)))  # the nodes the new instances will be
                    refused, onto = self._launch(d, pool, ranks, now, extra, steps)
                    if refused is not None:
                        return refused
            # journaled before anything is stopped: a controller killed mid-resize leaves this
            # intent, and the next one resumes or rolls it back (resume.py); the token is the new id
            token = new_job_id()
            steps.append(
                self.journal.write(self.clock(), d, "intent", intent_id=token, onto=list(onto), **extra)
            )
            new_id = self.resize(job, int(d.to), onto, token)
        except GpudeckError as exc:
            self.failed[(d.rule, d.job_name)] = now
            return self.journal.write(now, d, "failed", error=str(exc), **_closing(steps), **extra)
        return self.journal.write(self.clock(), d, "applied", new_job=new_id, intent_id=token, **extra)

    def _launch(
        self,
        d: Decision,
        pool: Any,
        ranks: list[int],
        now: float,
        extra: dict[str, Any],
        steps: list[dict[str, Any]],
    ) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
        """An instance of `pool` (its fields say what) for each of the job's nodes `ranks`, or the
        budget's refusal (journaled); GpudeckError on a failed launch."""
        assert self.capacity is not None
        count = len(ranks)
        per_hour = self.capacity.price(pool)
        left, burn = self.fleet_figures if self.fleet is not None else (None, None)
        view_left = d.inputs.get("budget_left") if isinstance(d.inputs, dict) else None
        job_left = view_left if isinstance(view_left, (int, float)) else None
        extra["capacity"].update(
            launch=pool.instance_type,
            provider=pool.provider,
            per_hour=per_hour,
            fleet_budget_left=left,
            fleet_burn=burn,
        )
        why = launch_refusal(per_hour, count, left, burn, job_left, self.currency)
        if why is not None:
            self.failed[(d.rule, d.job_name)] = now
            refused = replace(d, action="refused", reason=f"refused before launching: {why}; {d.reason}")
            return self.journal.write(now, refused, "refused", **extra), ()
        tokens = []
        for rank in ranks:
            pending, done = self.journal.launch_token(pool.name, d.job_id, rank)
            token = pending or launch_token(pool.name, d.job_id, d.rule, rank, done)
            tokens.append((rank, token))
            self.touched.add(token)
            self.booting[token] = (d, pool, rank, extra)
            if token in self.flights.work:
                continue  # under way since an earlier pass (in-flight work: the pass goes on)
            # journaled before the cloud is asked: a retry after any failure (or a killed controller)
            # reuses the token, and the launch finds the instance instead of making a second
            steps.append(
                self.journal.write(
                    self.clock(), d, "launching", pool=pool.name, rank=rank, token=token, **extra
                )
            )
            self.flights.start(token, self.capacity.launch, pool, token)
        booting = [t for _, t in tokens if self.flights.running(t)]
        if booting:  # asked again at the next pass, while the rule still decides so
            raise LaunchInFlight(booting[0], started=bool(steps))
        hosts = []
        for rank, token in tokens:
            self.booting.pop(token, None)
            launched = self.flights.call(token, self.capacity.launch, pool, token)
            hosts.append(launched.host)
            steps.append(self._joined(d, pool, launched, rank, token, extra))
        extra["capacity"]["onto"] = hosts
        return None, tuple(hosts)

    def _join(self, pool: str, host: str) -> dict[str, Any]:
        """Write the launched host into policies.toml's pool (a restarted controller sees it); a file
        that cannot be written does not undo the launch: the record says why."""
        if self.join_pool is None:
            return {}
        try:
            self.join_pool(pool, host)
        except PolicyError as exc:
            return {"pool_file_error": str(exc)}
        return {}


def _closing(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The decision token of the intent among `steps` (a failure closes it), if one was written."""
    tokens = [r["intent_id"] for r in steps if r.get("outcome") == "intent"]
    return {"intent_id": tokens[-1]} if tokens else {}


def _grows(d: Decision) -> bool:
    return d.action == "scale" and isinstance(d.to, int) and isinstance(d.frm, int) and d.to > d.frm


def _costs_more(d: Decision) -> bool:
    """A decision the fleet's daily budget has a say in: a scale up, applied or proposed, or a bigger type."""
    if d.kind == "vertical":
        return d.action in ("propose", "scale")
    return (
        d.action in ("scale", "propose") and isinstance(d.to, int) and isinstance(d.frm, int) and d.to > d.frm
    )


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, type(None))) else repr(value)


def run_forever(
    controller: Controller,
    interval: float,
    say: Callable[[dict[str, Any]], None],
    once: bool = False,
    stop: threading.Event | None = None,
) -> None:
    """Pass after pass until `stop` is set; a pass under way is finished first, so a resize is never
    cut between its stop and its relaunch."""
    stop = stop or threading.Event()
    while not stop.is_set():
        for record in controller.tick():
            say(record)
        if once:
            return
        stop.wait(interval)


def _gpus_of(entries: Sequence[CatalogEntry], instance_type: str) -> int | None:
    """The GPU count the catalog gives an instance type (the same in every region it lists)."""
    return next((e.gpus for e in entries if e.instance_type == instance_type and e.gpus), None)
