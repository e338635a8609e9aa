"""`gpudeck cost`: what each host and job costs now, has cost, will cost, and wasted idle.

Everything is derived from the hosts' journals and the ledger, so the figures hold for the hours
gpudeck was closed. Every fact seen is written to the ledger on the way.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from functools import partial
from typing import Any

from .. import paths
from ..cost.collect import HostSnapshot, snapshot
from ..cost.ledger import Ledger
from ..cost.push import push_price
from ..cost.quotes import spot_for_host
from ..cost.report import CostContext, build, parse_since
from ..cost.settings import HostPrice, host_price
from ..errors import EXIT_USAGE, GpudeckError
from ..format import duration, table
from ..format import money as format_money
from ..printable import warn
from ..remote.client import AgentError
from ..session import Session
from ..settings import CloudSettings


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("cost", help="burn, accrued, projected and idle cost per host and job")
    p.add_argument("--json", action="store_true", help="JSON with hosts, jobs and fleet totals")
    p.add_argument(
        "--since", metavar="DATE", help="only cost from DATE on (2026-11-28, an ISO time, or 36h / 7d)"
    )


def host_settings(name: str) -> dict[str, Any]:
    """The host's hosts.toml table as a dict (its price keys live among the fields hosts keeps)."""
    from ..hosts_file import HostsFileError, load_hosts

    try:
        entry = load_hosts().get(name)
    except HostsFileError as exc:
        raise GpudeckError(str(exc)) from None
    return dict(entry.extra) if entry is not None else {}


def gather(
    session: Session, since: float | None, cloud: CloudSettings
) -> tuple[list[HostSnapshot], dict[str, HostPrice], dict[str, Any], list[dict[str, str]]]:
    snaps: list[HostSnapshot] = []
    prices: dict[str, HostPrice] = {}
    spot: dict[str, Any] = {}
    errors: list[dict[str, str]] = []
    mtime = _hosts_mtime()
    for name in session.hosts():
        settings = host_settings(name)
        try:
            snap = snapshot(name, session.client(name), None if since is None else since)
        except (GpudeckError, AgentError, TimeoutError, OSError) as exc:  # one host down: report the rest
            errors.append({"host": name, "error": str(exc)})
            continue
        starts = [j["started_at"] for j in snap.jobs if j.get("started_at")]
        first = min([*starts, snap.boot_time or snap.host_now])
        live = spot_for_host(settings, first, snap.host_now, cloud)
        if live is not None and live.periods:
            spot[name] = live.periods
        if live is not None and live.error:
            errors.append({"host": name, "error": live.error})
        prices[name] = host_price(settings, live.quote if live else None)
        # Running budgets follow a change from when it happened (hosts.toml's mtime), not from launch.
        problem = push_price(
            session.client(name).request,
            prices[name],
            None if mtime is None else min(snap.host_now, mtime + snap.offset),
        )
        if problem:
            errors.append({"host": name, "error": problem})
        snaps.append(snap)
    return snaps, prices, spot, errors


def run(args: argparse.Namespace, session: Session) -> int:
    config = session.settings.cost
    ctx = CostContext.of(config)
    since = None
    if args.since:
        try:
            since = parse_since(args.since, ctx.tz, time.time())
        except ValueError as exc:
            raise GpudeckError(str(exc), EXIT_USAGE) from None
    snaps, prices, spot, errors = gather(session, since, session.settings.cloud)
    with _ledger() as ledger:
        report = build(snaps, prices, ctx, ledger, since, spot, settings_changed_at=_hosts_mtime())
    report["errors"] = errors
    report["chains"] = _chains(report["jobs"])
    from .cost_savings import savings_of

    report["savings"] = savings_of(
        snaps, prices, ctx, since, report, host_settings, _chains, session.settings.cloud
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    return 0


def _chains(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Managed chains' one cost each (tui/managed/chain_cost.py); nothing loaded without any."""
    if not (paths.data_dir() / "managed").is_dir():
        return []
    from ..managed.chain_cost import chain_costs

    return chain_costs(jobs)


def fleet_today(session: Session) -> tuple[float | None, float | None]:
    """(today's spend, burn per hour) of the fleet, in [cost] currency, as `gpudeck cost` reports them
    (`policy run` asks it only when a rule wants to grow a job)."""
    config = session.settings.cost
    snaps, prices, spot, _errors = gather(session, None, session.settings.cloud)
    with _ledger() as ledger:
        report = build(
            snaps, prices, CostContext.of(config), ledger, None, spot, settings_changed_at=_hosts_mtime()
        )
    fleet = report.get("fleet") or {}
    return fleet.get("today_usd"), fleet.get("burn_usd_per_hour")


def _hosts_mtime() -> float | None:
    """When hosts.toml was last written: the moment a price change found now was made (by hand,
    a catalog switch, a removal), so it is dated then and not at this `cost` run."""
    from ..hosts_file import hosts_path

    try:
        return hosts_path().stat().st_mtime
    except OSError:
        return None


def _ledger() -> Ledger:
    """The ledger; when state.db cannot be opened for writing (a read-only home, a lock held by
    another process, a permission), a read-only copy: a report is only a read."""
    try:
        paths.ensure_private(paths.data_dir())
        return Ledger(paths.state_db())
    except (OSError, sqlite3.Error) as exc:
        hint = paths.unwritable_hint(paths.data_dir(), paths.state_db())
        try:
            ledger = Ledger.read_only_copy(paths.state_db())
        except (OSError, sqlite3.Error) as again:
            raise GpudeckError(f"{paths.state_db()}: {again} ({hint})") from None
        warn(
            f"gpudeck: warning: {paths.state_db()}: {exc} ({hint}); reporting from a read-only copy, nothing recorded"
        )
        return ledger


money = partial(format_money, unknown="unknown")  # a table cell says "unknown", the TUI "—"


def fleet_figures(fleet: dict[str, Any], cur: str) -> list[str]:
    """`burn $3.60/h`, `today ≥ $1.20 (1 host unpriced)`, `jobs unknown (2 jobs unpriced)`: a total
    with an unknown part is a lower bound or unknown, never shown as if it were whole."""
    out = []
    for label, key, part, per in (
        ("burn", "burn_usd_per_hour", "burn", "/h"),
        ("today", "today_usd", "today", ""),
        ("jobs", "jobs_accrued_usd", "jobs_accrued", ""),
    ):
        missing = (fleet.get("unknown") or {}).get(part) or []
        what = "job" if part == "jobs_accrued" else "host"
        why = f" ({len(missing)} {what}{'s' if len(missing) != 1 else ''} unpriced)" if missing else ""
        value = fleet.get(key)
        if value is None:
            out.append(f"{label} unknown{why}")
        else:
            out.append(f"{label} {'≥ ' if missing else ''}{money(value, cur, per)}{why}")
    return out


def held_reason(job: dict[str, Any], cur: str) -> str:
    """The job's reason, and the time it was held for debugging with what that cost (--hold-on-fail)."""
    held = job.get("held_s")
    if not held:
        return job["reason"] or ""
    text = f"held {duration(held)} for debugging: {money(job.get('held_usd'), cur)}"
    return f"{job['reason']}; {text}" if job["reason"] else text


def render(report: dict[str, Any]) -> str:
    cur = report["currency"]
    host_rows = [
        [
            h["name"],
            f"{h['price']['per_hour']} {h['price']['currency']}/h"
            if h["price"]["per_hour"] is not None
            else "unknown",
            money(h["burn_usd_per_hour"], cur, "/h"),
            money(h["accrued_usd"], cur),
            money(h["today_usd"], cur),
            h["since_source"],
        ]
        for h in report["hosts"]
    ]
    job_rows = [
        [
            j["id"],
            j["name"],
            j["state"],
            money(j["burn_usd_per_hour"], cur, "/h"),
            money(j["accrued_usd"], cur),
            money(j["projected_usd"], cur) if j["projected_usd"] is not None else "-",
            money(j["idle_usd"], cur),
            held_reason(j, cur),
        ]
        for j in report["jobs"]
    ]
    fleet = report["fleet"]
    lines = [
        table(["HOST", "PRICE", "BURN", "ACCRUED", "TODAY", "SINCE"], host_rows),
        "",
        table(["JOB", "NAME", "STATE", "BURN", "ACCRUED", "PROJECTED", "IDLE", "REASON"], job_rows),
        "",
        "fleet: " + ", ".join(fleet_figures(fleet, cur)),
    ]
    if fleet["rules"]["note"] and fleet.get("daily_budget"):
        lines.append(fleet["rules"]["note"])
    if report.get("chains"):
        from ..managed.chain_cost import chain_lines

        lines += ["", *chain_lines(report["chains"], lambda v: money(v, cur))]
    if report.get("savings"):
        from ..cost.savings import savings_lines

        saved = savings_lines(report["savings"], lambda v: money(v, cur))
        lines += ["", *saved] if saved else []
    for err in report.get("errors") or []:
        lines.append(f"{err['host']}: {err['error']}")
    return "\n".join(lines)
