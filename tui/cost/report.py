"""Host snapshots + prices + ledger → the cost report (`gpudeck cost --json`, the TUI's counters).

Also writes to the ledger every cost fact the snapshots reveal, so the next `cost --since` can
answer for jobs whose journals are gone.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..settings import CostSettings
from .billing import Money, PricePeriod, convert, minimum_seconds, periods_from_changes, spliced
from .collect import HostSnapshot
from .counters import HostCost, HostInput, JobCost, JobTotal, SettledCache, by_job, host_costs, job_total
from .held import add_held
from .ledger import Fact, Ledger
from .rules import budget_status
from .runs import NodeRun, fold
from .settings import HostPrice

FLOAT_PLACES = 6


@dataclass
class CostContext:
    currency: str = "USD"  # what `*_usd` fields convert to (USD unless config says otherwise)
    fx: Mapping[str, float] | None = None
    tz: dt.tzinfo = dt.timezone.utc
    daily_budget: float | None = None

    @classmethod
    def of(cls, settings: CostSettings) -> CostContext:
        """config.toml's [cost]: the currency totals are shown in, its fx, "today"'s zone, the budget."""
        return cls(settings.currency, dict(settings.fx), settings.tz, settings.daily_budget)


def midnight(now: float, tz: dt.tzinfo) -> float:
    local = dt.datetime.fromtimestamp(now, tz)
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def parse_since(text: str, tz: dt.tzinfo, now: float) -> float:
    """`2026-11-28` (midnight, user's zone), an ISO time, or a span back from now: `36h`, `7d`."""
    text = text.strip()
    units = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
    if len(text) > 1 and text[-1] in units and text[:-1].replace(".", "", 1).isdigit():
        return now - float(text[:-1]) * units[text[-1]]
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--since {text!r}: expected a date (2026-11-28), a time, or a span (36h, 7d)"
        ) from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)).timestamp()


def terms(price: HostPrice) -> dict[str, Any]:
    """The billing terms a price row records besides the price: a change of provider (its minimum)
    or market (spot history or not) opens a period of its own, so past runs keep theirs."""
    return {"provider": price.provider, "market": price.market}


def _change(f: Fact) -> tuple[float, float | None, str, str, float | None]:
    data = f.data or {}
    minimum = minimum_seconds(data.get("provider")) if "provider" in data else None  # older rows: unrecorded
    return (f.at, f.per_hour, f.currency or "USD", f.source or "", minimum)


def host_periods(
    name: str,
    price: HostPrice,
    ledger: Ledger | None,
    spot: Sequence[PricePeriod] | None,
    host_now: float,
    changed_at: float | None = None,
) -> list[PricePeriod]:
    """The host's price over time: the prices (and terms) the ledger saw, each from the moment it
    was set, ending with the price that applies now; a spot history prices the time since the host
    became spot (the latest stretch of rows with market spot), never what ran before it.

    A price or terms that differ from the ledger's last row (set, changed, switched to a catalog
    price or to spot, removed) is recorded here, dated when it happened: `changed_at` (hosts.toml's
    mtime on the host's clock: a hand edit is a write of that file, so the change is never later than
    it, and never earlier than the row it follows), else now. Without a ledger nothing is dated: the
    price now (or the spot history) is taken to hold throughout, as a spot history's first price does.
    """
    if ledger is None:
        if spot:
            return list(spot)
        if price.per_hour is None:
            return []
        return periods_from_changes([(host_now, price.per_hour, price.currency, price.source)])
    rows = ledger.prices(name)
    now_terms = terms(price)
    last = rows[-1] if rows else None
    differs = (
        (last.per_hour, last.currency if last.per_hour is not None else "")
        != (price.per_hour, price.currency if price.per_hour is not None else "")
        # terms are compared where the row recorded them (rows written before they were are not
        # re-dated by an upgrade)
        or (price.per_hour is not None and bool(last.data) and last.data != now_terms)
        if last
        else price.per_hour is not None
    )
    if differs:
        after = last.at if last else float("-inf")
        at = changed_at if changed_at is not None and after < changed_at <= host_now else host_now
        source = price.source if price.per_hour is not None else f"price removed ({price.source})"
        if ledger.record_price(name, at, price.per_hour, price.currency, source, time.time(), now_terms):
            rows = ledger.prices(name)
    periods = periods_from_changes([_change(f) for f in rows], open_start=False)
    if not spot:
        return periods
    became_spot = None  # the start of the latest stretch of rows priced as spot
    for f in reversed(rows):
        if (f.data or {}).get("market") != "spot":
            break
        became_spot = f.at
    if became_spot is None:
        return list(spot)  # an older ledger that never recorded the market: as before
    minimum = minimum_seconds(price.provider)
    return spliced(periods, [replace(p, minimum_s=minimum) for p in spot], became_spot)


@dataclass
class ReportMemo:
    """Kept between one tracker's reports: each job's total and JSON while its nodes' figures are
    the very objects of the last report (an ended node's come unchanged from its SettledCache), and
    the ledger's jobs while the ledger wrote nothing, the live jobs are the same and the minute is."""

    jobs: dict[str, tuple[tuple[JobCost, ...], JobTotal, dict[str, Any]]] = field(default_factory=dict)
    ledger_key: tuple[Any, ...] | None = None
    ledger_jobs: list[JobTotal] = field(default_factory=list)


def build(
    snapshots: Sequence[HostSnapshot],
    prices: Mapping[str, HostPrice],
    ctx: CostContext,
    ledger: Ledger | None = None,
    since: float | None = None,
    spot: Mapping[str, Sequence[PricePeriod]] | None = None,
    runs_by_host: Mapping[str, Sequence[NodeRun]] | None = None,
    settings_changed_at: float | None = None,
    settled: Mapping[str, tuple[SettledCache, object]] | None = None,
    memo: ReportMemo | None = None,
) -> dict[str, Any]:
    """`since` is on the client's clock; each host's window is shifted onto that host's clock.
    `settings_changed_at`: hosts.toml's mtime (client clock), which dates a price change found now.
    `settled` (per host: its cache of ended nodes' figures and the version of its runs) and `memo`
    let a live caller price only what runs; the figures are the same as without them.

    `runs_by_host`: runs already folded (the TUI's tracker keeps them up to date incrementally);
    otherwise each snapshot's journals are folded here.
    """
    now = time.time()
    hosts: list[HostCost] = []
    for snap in snapshots:
        price = prices[snap.name]
        changed_at = None if settings_changed_at is None else settings_changed_at + snap.offset
        periods = host_periods(
            snap.name, price, ledger, (spot or {}).get(snap.name), snap.host_now, changed_at
        )
        if runs_by_host is not None:
            runs = list(runs_by_host.get(snap.name, []))
        else:
            runs = [
                fold(snap.name, job, snap.journals.get((job["id"], str(job.get("node") or "0")), []))
                for job in snap.jobs
            ]
        first_start = min((r.start for r in runs if r.start is not None), default=None)
        start, source = (snap.boot_time, "boot") if snap.boot_time is not None else (first_start, "first_job")
        if price.per != "host":  # a Slurm host: only its allocations are billed, not the login node
            start, source = None, "allocations"
        host_input = HostInput(
            snap.name,
            periods,
            snap.gpu_uuids,
            snap.host_now,
            start,
            source if start else "unknown",
            minimum_seconds(price.provider),
            price.per,
        )
        window = (since + snap.offset, snap.host_now) if since is not None else None
        cache, version = (settled or {}).get(snap.name, (None, None))
        cost = host_costs(host_input, runs, window, midnight(now, ctx.tz) + snap.offset, cache, version)
        hosts.append(cost)
        if ledger is not None:
            record_facts(ledger, cost, runs, now)
    totals, jobs_json = _totals(hosts, ctx, memo)
    add_held(jobs_json, snapshots, lambda m: _in(m, ctx))  # --hold-on-fail: the held time's cost
    live_ids = {j.id for j in totals}
    ledger_jobs = [] if ledger is None else _ledger_jobs_memo(ledger, live_ids, since, now, memo)
    return {
        "currency": ctx.currency,
        "fx": dict(ctx.fx or {}),
        "since": since,
        "hosts": [_host_json(h, prices[h.name], ctx) for h in hosts],
        "jobs": jobs_json + [_job_json(j, ctx, "ledger") for j in ledger_jobs],
        "fleet": _fleet_json(hosts, totals + ledger_jobs, ctx, ledger, now),
    }


def _totals(
    hosts: Sequence[HostCost], ctx: CostContext, memo: ReportMemo | None
) -> tuple[list[JobTotal], list[dict[str, Any]]]:
    """Each job's total and JSON, newest id first; with a memo, a job whose nodes' figures are
    unchanged objects keeps last report's (the JSON is shared: readers must not change it)."""
    out: list[tuple[JobTotal, dict[str, Any]]] = []
    kept: dict[str, tuple[tuple[JobCost, ...], JobTotal, dict[str, Any]]] = {}
    for jid, nodes in by_job(hosts).items():
        figures = tuple(jc for _, jc in nodes)
        last = memo.jobs.get(jid) if memo is not None else None
        if (
            last is not None
            and len(last[0]) == len(figures)
            and all(a is b for a, b in zip(last[0], figures, strict=True))
        ):
            total, js = last[1], last[2]
        else:
            total = job_total(jid, nodes)
            js = _job_json(total, ctx)
        kept[jid] = (figures, total, js)
        out.append((total, js))
    if memo is not None:
        memo.jobs = kept
    out.sort(key=lambda pair: pair[0].id, reverse=True)
    return [t for t, _ in out], [js for _, js in out]


def _ledger_jobs_memo(
    ledger: Ledger, live_ids: set[str], since: float | None, now: float, memo: ReportMemo | None
) -> list[JobTotal]:
    """The ledger's jobs, read again when this ledger wrote something, the live jobs changed, or a
    minute passed (another gpudeck may have written the same state.db)."""
    if memo is None:
        return _ledger_jobs(ledger, live_ids, since)
    key = (ledger.writes, frozenset(live_ids), since, int(now // 60))
    if memo.ledger_key != key:
        memo.ledger_jobs, memo.ledger_key = _ledger_jobs(ledger, live_ids, since), key
    return memo.ledger_jobs


def _money(m: Money | None) -> dict[str, float] | None:
    return None if m is None else m.rounded(FLOAT_PLACES)


def _in(m: Money | None, ctx: CostContext) -> float | None:
    if m is None:
        return None
    value = convert(m, ctx.fx or {}, ctx.currency)
    return None if value is None else round(value, FLOAT_PLACES)


def _host_json(h: HostCost, price: HostPrice, ctx: CostContext) -> dict[str, Any]:
    return {
        "name": h.name,
        "price": {
            "per_hour": price.per_hour,
            "currency": price.currency,
            "market": price.market,
            "source": h.price.source if h.price else price.source,
        },
        "burn_usd_per_hour": _in(h.burn, ctx) if price.known else None,
        "accrued_usd": _in(h.accrued, ctx),
        "today_usd": _in(h.today, ctx),
        "since": h.since,
        "since_source": h.since_source,
        "unattributed_usd": _in(h.unattributed, ctx) if h.accrued is not None else None,
        # True: part of the time had no known price (before it was set, after it was removed), so
        # the figure counts only the priced part: a lower bound.
        "partial": {"accrued": h.accrued_partial, "today": h.today_partial},
        "burn": _money(h.burn),
        "accrued": _money(h.accrued),
        "today": _money(h.today),
        "jobs": [f"{j.key[1]}/{j.key[2]}" for j in h.jobs],
    }


def _job_json(j: JobTotal, ctx: CostContext, origin: str = "journal") -> dict[str, Any]:
    def conv(m: Money | None) -> float | None:
        # A node on a host of unknown price makes the job's total unknown, not smaller.
        return None if j.unpriced_hosts else _in(m, ctx)

    return {
        "id": j.id,
        "name": j.name,
        "state": j.state,
        "hosts": j.hosts,
        "reason": j.reason,
        "burn_usd_per_hour": conv(j.burn),
        "accrued_usd": conv(j.accrued),
        "projected_usd": conv(j.projected),
        "idle_usd": conv(j.idle),
        "price_unknown_on": j.unpriced_hosts,
        "budget": j.budget,
        "budget_status": _budget_status(j),
        "steps_per_s": None if j.steps_per_s is None else round(j.steps_per_s, FLOAT_PLACES),
        "burn": _money(j.burn),
        "accrued": _money(j.accrued),
        "projected": _money(j.projected),
        "idle": _money(j.idle),
        "from": origin,
    }


def _budget_status(j: JobTotal) -> str | None:
    if j.budget is None or len(j.accrued.amounts) > 1:
        return None
    return budget_status(next(iter(j.accrued.amounts.values()), 0.0), j.budget)


def _fleet_json(
    hosts: Sequence[HostCost], jobs: Sequence[JobTotal], ctx: CostContext, ledger: Ledger | None, now: float
) -> dict[str, Any]:
    burn, accrued, today, jobs_accrued = Money(), Money(), Money(), Money()
    # What each total lacks: a part that is unknown makes the total unknown (nothing known) or a
    # lower bound ("≥ $X, N hosts unpriced"), never a smaller figure passed off as the whole.
    unknown: dict[str, list[str]] = {"burn": [], "accrued": [], "today": [], "jobs_accrued": []}
    known = {name: 0 for name in unknown}  # parts that add something known
    for h in hosts:
        if h.price is None:
            unknown["burn"].append(h.name)
        else:
            known["burn"] += 1
        burn.merge(h.burn)
        for name, part, partial in (
            ("accrued", h.accrued, h.accrued_partial),
            ("today", h.today, h.today_partial),
        ):
            if part is None or partial:
                unknown[name].append(h.name)
            if part is not None:
                known[name] += 1
                (accrued if name == "accrued" else today).merge(part)
    for j in jobs:
        if j.unpriced_hosts:
            unknown["jobs_accrued"].append(j.id)
        if j.accrued:
            known["jobs_accrued"] += 1
        jobs_accrued.merge(j.accrued)  # a job's known part too: the total is then a lower bound

    def total(name: str, m: Money, parts: int) -> float | None:
        return None if unknown[name] and not known[name] else _in(m, ctx)

    paused = ledger.rules_paused_since(now) if ledger is not None else 0.0
    return {
        "burn_usd_per_hour": total("burn", burn, len(hosts)),
        "accrued_usd": total("accrued", accrued, len(hosts)),
        "today_usd": total("today", today, len(hosts)),
        "jobs_accrued_usd": total("jobs_accrued", jobs_accrued, len(jobs)),
        "burn": _money(burn),
        "accrued": _money(accrued),
        "today": _money(today),
        "jobs_accrued": _money(jobs_accrued),
        # Hosts (jobs for jobs_accrued) whose part of each total is unknown: a non-empty list makes the
        # figure beside it a lower bound, or None when no part is known.
        "unknown": unknown,
        "unpriced_hosts": unknown["burn"],
        "daily_budget": ctx.daily_budget,
        # Fleet rules (the daily budget) are enforced by a running client; say since when none is.
        "rules": {
            "enforced": paused is None,
            "paused_since": paused or None,
            "note": None
            if paused is None
            else (
                "fleet rules paused since " + _when(paused)
                if paused
                else "fleet rules paused: no gpudeck client has enforced them yet"
            ),
        },
    }


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def record_facts(ledger: Ledger, cost: HostCost, runs: Sequence[Any], now: float) -> None:
    by_key = {r.key: r for r in runs}
    for jc in cost.jobs:
        if jc.key in cost.reused:  # its facts were written when its figures were made
            continue
        run = by_key[jc.key]
        host, job, node = jc.key
        if run.start is not None:
            ledger.record(Fact(run.start, host, "job_start", job, node, data={"name": run.name}), now)
        if run.end is not None:
            currency, amount = next(iter(jc.accrued.amounts.items()), (None, None))
            ledger.record(
                Fact(
                    run.end,
                    host,
                    "job_end",
                    job,
                    node,
                    amount=amount,
                    currency=currency,
                    data={
                        "name": run.name,
                        "state": run.state,
                        "reason": run.reason,
                        "accrued": jc.accrued.rounded(),
                        "idle": jc.idle.rounded(),
                    },
                ),
                now,
            )
            reason = run.reason or ""
            for prefix, kind in (("budget", "budget_stop"), ("idle", "idle_stop")):
                if reason.startswith(prefix):
                    ledger.record(Fact(run.end, host, kind, job, node, data={"reason": reason}), now)
        for ev in run.events:
            if ev["event"] in ("budget_warning", "autostop_paused", "autostop_resumed", "autostop"):
                ledger.record(Fact(ev["t"], host, ev["event"], job, node, data=ev["data"]), now)


def _ledger_jobs(ledger: Ledger, live_ids: set[str], since: float | None) -> list[JobTotal]:
    """Jobs the hosts no longer report (removed, host gone), from their recorded end."""
    out: dict[str, JobTotal] = {}
    for fact in ledger.job_ends():
        if fact.job in live_ids:
            continue
        if since is not None and fact.at < since:
            continue
        data = fact.data or {}
        total = out.setdefault(
            fact.job, JobTotal(fact.job, data.get("name") or "?", data.get("state") or "?", [])
        )
        total.hosts.append(fact.host)
        total.accrued.merge(Money(dict(data.get("accrued") or {})))
        total.idle.merge(Money(dict(data.get("idle") or {})))
        total.projected = Money().merge(total.accrued)
        total.reason = total.reason or data.get("reason")
    return list(out.values())
