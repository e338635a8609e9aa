"""Cost counters per host and per job, derived from journals and prices: right for hours nobody watched.

Pure: every input (runs, price periods, GPU inventory, the host's clock now) is passed in.

Shares (issue 7): a host's price is split over its GPUs; a job pays for the GPUs it uses (the
uuids in its `gpu` records, else all of the host's: no CUDA_VISIBLE_DEVICES means every GPU);
jobs on one GPU split it evenly. On a host without GPUs the jobs running at the same time split
the host, and a lone job pays all of it. Shares change whenever a job starts or ends, so time is
cut into segments at every start and end, and each segment is priced with its own shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .billing import Money, PricePeriod, accrue, covered, minimum_at, price_at
from .runs import NodeRun, idle_intervals, steps_per_second

Key = tuple[str, str, str]  # (host, job, node)
Interval = tuple[float, float]


@dataclass
class HostInput:
    name: str
    periods: list[PricePeriod]  # empty: price unknown
    gpu_uuids: list[str]  # the host's GPUs (hello's inventory); empty: no GPU
    host_now: float
    instance_start: float | None = None
    start_source: str = "unknown"
    minimum_s: float = 0.0  # the provider's minimum billed duration (instance-level)
    per: str = "host"  # "gpu"/"node": a Slurm host, each node billed on its own (HostPrice.per)


@dataclass
class Segment:
    start: float
    end: float
    shares: dict[Key, float]


def shares_for(active: Sequence[NodeRun], gpu_uuids: Sequence[str], per: str = "host") -> dict[Key, float]:
    if not active:
        return {}
    if per != "host":  # a Slurm node is a machine of its own: the rate × its GPUs (or × 1 node)
        return {run.key: float(run.units or 0) if per == "gpu" else 1.0 for run in active}
    if not gpu_uuids:
        return {run.key: 1.0 / len(active) for run in active}
    shares = {run.key: 0.0 for run in active}
    per_gpu = 1.0 / len(gpu_uuids)
    for uuid in gpu_uuids:
        users = [run for run in active if not run.gpus or uuid in run.gpus or not run.gpus & set(gpu_uuids)]
        for run in users:
            shares[run.key] += per_gpu / len(users)
    return shares


def segments(
    runs: Sequence[NodeRun], gpu_uuids: Sequence[str], host_now: float, per: str = "host"
) -> list[Segment]:
    ends = {run.key: (run.start, run.until(host_now)) for run in runs}
    spans = {k: (s, e) for k, (s, e) in ends.items() if s is not None and e is not None and e > s}
    cuts = sorted({t for span in spans.values() for t in span})
    timed = [run for run in runs if run.key in spans]  # once, not per cut: 500 listed jobs, few with a span
    out: list[Segment] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        active = [run for run in timed if spans[run.key][0] <= a and spans[run.key][1] >= b]
        if active:
            out.append(Segment(a, b, shares_for(active, gpu_uuids, per)))
    return out


def cost_over(
    key: Key, intervals: Sequence[Interval], segs: Sequence[Segment], periods: Sequence[PricePeriod]
) -> Money:
    total = Money()
    for seg in segs:
        share = seg.shares.get(key)
        if not share:
            continue
        for lo, hi in intervals:
            a, b = max(lo, seg.start), min(hi, seg.end)
            if b > a:
                total.merge(accrue(periods, a, b, share))
    return total


@dataclass
class JobCost:
    key: Key
    name: str
    state: str
    reason: str | None
    accrued: Money = field(default_factory=Money)
    idle: Money = field(default_factory=Money)
    burn: Money = field(default_factory=Money)  # per hour, now
    projected: Money | None = None  # None: no total_steps or no rate yet
    share_now: float | None = None
    steps_per_s: float | None = None
    seconds_left: float | None = None  # to the last step, at this node's rate (only rank 0 prints steps)
    priced: bool = True  # False: the host's price is unknown, so is this node's cost
    budget: float | None = None  # the spec's, in the spec price's currency, when the agent reports it
    start: float | None = None
    end: float | None = None


@dataclass
class HostCost:
    name: str
    burn: Money
    accrued: Money | None  # None: we do not know when the instance started
    today: Money | None
    since: float | None
    since_source: str
    price: PricePeriod | None
    jobs: list[JobCost]
    unattributed: Money = field(default_factory=Money)  # GPUs no job used: still billed
    accrued_partial: bool = False  # some of the time had no known price: `accrued` is a lower bound
    today_partial: bool = False
    reused: frozenset[Key] = (
        frozenset()
    )  # ended nodes whose figures came from the cache (facts already written)


def settled(run: NodeRun, host_now: float) -> bool:
    """Figures that no longer move with the clock: ended by now, or never started as far as we know
    (a job listed by the host whose journal was not read: nothing to price until its start is known,
    which changes its version)."""
    return run.start is None or (run.end is not None and run.end <= host_now)


@dataclass
class SettledCache:
    """One host's settled (ended, or not started) nodes' figures, kept while nothing they depend on changed (`stamp`: the
    price periods, the GPUs, the billing minimum, the tracker's version of the host's runs, how
    many have ended). An ended node's cost does not change with the clock, so a report prices only
    what still runs: the TUI's counters no longer grow with history."""

    stamp: tuple[object, ...] = ()
    jobs: dict[Key, JobCost] = field(default_factory=dict)
    used: Money = field(default_factory=Money)  # the ended nodes' accrued, summed in run order


def host_costs(
    host: HostInput,
    runs: Sequence[NodeRun],
    window: Interval | None = None,
    day_start: float | None = None,
    cache: SettledCache | None = None,
    version: object = None,
) -> HostCost:
    """`window` (host clock) clips every figure (for `cost --since`); `day_start` is today's midnight
    in the user's time zone, on the host's clock. `cache` (with the caller's `version` of `runs`,
    changed whenever a run's start, end, state, GPUs, rules or an ended run's records change) keeps
    the ended nodes' figures between calls; used only without a window."""
    now = host.host_now
    lo, hi = window if window else (float("-inf"), now)
    current = price_at(host.periods, now) if host.periods else None
    done = [settled(run, now) for run in runs]
    reused: frozenset[Key] = frozenset()
    stamp = (tuple(host.periods), tuple(host.gpu_uuids), host.minimum_s, host.per, version, sum(done))
    if cache is not None and window is None and version is not None and cache.stamp == stamp:
        live = [run for run, d in zip(runs, done, strict=True) if not d]
        segs = segments(_overlapping(runs, live, now), host.gpu_uuids, now, host.per)
        jobs = [
            cache.jobs[run.key] if d else _job_cost(run, segs, host, current, lo, hi)
            for run, d in zip(runs, done, strict=True)
        ]
        used_settled = cache.used
        reused = frozenset(cache.jobs)
    else:
        segs = segments(runs, host.gpu_uuids, now, host.per)
        jobs = [_job_cost(run, segs, host, current, lo, hi) for run in runs]
        used_settled = Money()
        for job, d in zip(jobs, done, strict=True):
            if d:
                used_settled.merge(job.accrued)
        if cache is not None and window is None and version is not None:
            cache.stamp = stamp
            cache.jobs = {job.key: job for job, d in zip(jobs, done, strict=True) if d}
            cache.used = used_settled
    burn = Money().add(current.currency, current.per_hour) if current and host.per == "host" else Money()
    accrued = today = None
    partial = partial_today = False
    if host.instance_start is not None and host.periods:
        start = max(host.instance_start, lo)
        minimum = minimum_at(host.periods, start, host.minimum_s) if start == host.instance_start else 0.0
        accrued = accrue(host.periods, start, min(now, hi), minimum=minimum)
        # A stretch without a known price (before one was set, after it was removed) adds nothing:
        # the figure is then a lower bound, and says so.
        partial = not covered(host.periods, start, min(now, hi))
        if day_start is not None:
            day_from = max(host.instance_start, day_start)
            today = accrue(host.periods, day_from, now)
            partial_today = not covered(host.periods, day_from, now)
    # The ended nodes' sum first, then the running ones: the same order with or without the cache,
    # so the figures are equal to the last bit.
    used = Money().merge(used_settled)
    for job, d in zip(jobs, done, strict=True):
        if not d:
            used.merge(job.accrued)
    unattributed = Money()
    if accrued is not None:
        unattributed = Money({c: max(0.0, a - used.get(c)) for c, a in accrued.amounts.items()})
    return HostCost(
        host.name,
        burn,
        accrued,
        today,
        host.instance_start,
        host.start_source,
        current,
        jobs,
        unattributed,
        partial,
        partial_today,
        reused,
    )


def _overlapping(runs: Sequence[NodeRun], live: Sequence[NodeRun], host_now: float) -> list[NodeRun]:
    """The runs whose time meets the running ones' (from the earliest start on): the only ones that
    shape the running nodes' segments, so the segments after that start are the same as from all runs."""
    starts = [run.start for run in live if run.start is not None]
    if not starts:
        return []  # no running node has a span: none is in any segment
    since = min(starts)
    out = []
    for run in runs:
        end = run.until(host_now)
        if run.start is not None and end is not None and end > since:
            out.append(run)
    return out


def _job_cost(
    run: NodeRun, segs: Sequence[Segment], host: HostInput, current: PricePeriod | None, lo: float, hi: float
) -> JobCost:
    now = host.host_now
    end = run.until(now)
    job = JobCost(
        run.key,
        run.name,
        run.state,
        run.reason,
        start=run.start,
        end=run.end,
        priced=bool(host.periods),
        budget=run.budget,
    )
    if run.start is None or end is None or not host.periods:
        return job
    span = [(max(run.start, lo), min(end, hi))]
    # Priced only if a price was known all along: a job that ran before the price was set, or on
    # after it was removed, has an unknown cost (its known part stays in `accrued`, a lower bound).
    job.priced = covered(host.periods, *span[0]) if span[0][1] > span[0][0] else True
    job.accrued = cost_over(run.key, span, segs, host.periods)
    # the minimum of the terms the job started under, not today's provider
    minimum = minimum_at(host.periods, run.start, host.minimum_s)
    job.accrued = _with_minimum(job.accrued, run.start, end, lo, hi, minimum)
    clipped = [(max(a, lo), min(b, hi)) for a, b in idle_intervals(run, now)]
    job.idle = cost_over(run.key, [iv for iv in clipped if iv[1] > iv[0]], segs, host.periods)
    if run.live and run.state != "lost" and segs and current is not None:
        job.share_now = segs[-1].shares.get(run.key)
        if job.share_now:
            job.burn = Money().add(current.currency, current.per_hour * job.share_now)
    job.steps_per_s = steps_per_second(run)
    job.projected = _projected(run, job, now)
    return job


def _with_minimum(accrued: Money, start: float, end: float, lo: float, hi: float, minimum: float) -> Money:
    """The provider's minimum billed duration (AWS: 60 s) applies to a job too: a 20 s job on an
    instance started for it is billed 60 s, at its own share and price. Only when the window holds
    the whole job (a `--since` cut is not a shorter job)."""
    seconds = end - start
    if minimum <= 0 or seconds <= 0 or seconds >= minimum or start < lo or end > hi:
        return accrued
    return accrued.scaled(minimum / seconds)


def _projected(run: NodeRun, job: JobCost, host_now: float) -> Money | None:
    """Accrued so far + burn × time left, time left = (total_steps − step) / steps per second."""
    if not run.live:
        return Money().merge(job.accrued)
    if run.total_steps is None or not run.steps or not job.steps_per_s:
        return None
    left_steps = max(0.0, run.total_steps - run.steps[-1][1])
    # The last point is some seconds old: that much of the remaining time has already passed.
    seconds_left = max(0.0, left_steps / job.steps_per_s - (host_now - run.steps[-1][0]))
    job.seconds_left = seconds_left
    return Money().merge(job.accrued).merge(job.burn.scaled(seconds_left / 3600.0))


@dataclass
class JobTotal:
    """One job over all its nodes (a job on two hosts at two prices adds both)."""

    id: str
    name: str
    state: str
    hosts: list[str]
    accrued: Money = field(default_factory=Money)
    idle: Money = field(default_factory=Money)
    burn: Money = field(default_factory=Money)
    projected: Money | None = field(default_factory=Money)
    reason: str | None = None
    steps_per_s: float | None = None
    unpriced_hosts: list[str] = field(default_factory=list)  # hosts whose price is unknown
    budget: float | None = None


def job_totals(hosts: Sequence[HostCost]) -> list[JobTotal]:
    return sorted(
        (job_total(jid, nodes) for jid, nodes in by_job(hosts).items()), key=lambda j: j.id, reverse=True
    )


def by_job(hosts: Sequence[HostCost]) -> dict[str, list[tuple[str, JobCost]]]:
    """Each job's nodes (host name, figures), in host then node order."""
    out: dict[str, list[tuple[str, JobCost]]] = {}
    for host in hosts:
        for jc in host.jobs:
            out.setdefault(jc.key[1], []).append((host.name, jc))
    return out


def job_total(job_id: str, nodes: Sequence[tuple[str, JobCost]]) -> JobTotal:
    total = JobTotal(job_id, nodes[0][1].name, nodes[0][1].state, [])
    # torchrun's rank 0 alone prints steps: the other nodes run as long as it does
    left = next((jc.seconds_left for _, jc in nodes if jc.seconds_left is not None), None)
    for host_name, jc in nodes:
        if jc.projected is None and left is not None and jc.state in ("running", "starting"):
            jc.projected = Money().merge(jc.accrued).merge(jc.burn.scaled(left / 3600.0))
        total.hosts.append(host_name)
        if not jc.priced:
            total.unpriced_hosts.append(host_name)
        total.accrued.merge(jc.accrued)
        total.idle.merge(jc.idle)
        total.burn.merge(jc.burn)
        total.reason = total.reason or jc.reason
        total.budget = total.budget if total.budget is not None else jc.budget
        total.steps_per_s = total.steps_per_s or jc.steps_per_s
        if jc.state in ("running", "starting"):
            total.state = jc.state
        if total.projected is not None:
            total.projected = None if jc.projected is None else total.projected.merge(jc.projected)
    return total
