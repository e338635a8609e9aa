"""`gpudeck policy eval [--at TIME] [--json]` and `gpudeck policy run [--interval S] [--once]`:
the rules in policies.toml, judged now (or at another time), or carried out by the controller."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ..actions import find, scale
from ..cost import catalog
from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import HostsFileError, load_hosts
from ..managed.candidates import CloudCandidate
from ..managed.cleanup import release_unused
from ..managed.cloud import ManagedCloud
from ..managed.records import ManagedDir
from ..managed.recover import managed_pass
from ..notify_controller import tell
from ..policy.cloud_capacity import CloudCapacity
from ..policy.controller import Controller, run_forever
from ..policy.inflight import InFlight
from ..policy.journal import PolicyJournal
from ..policy.observe import Observer
from ..policy.pool_file import add_pool_host, remove_pool_host
from ..policy.queue_capacity import QueueCapacity
from ..policy.rules import PolicyError, load
from ..queue.entries import Queue
from ..queue.start import recover, start_waiting
from ..session import Session


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "policy",
        help="autoscaling rules (policies.toml): what they decide, or carry them out",
        description="Rules live in policies.toml in the config dir (see the README's Policies).",
    )
    verbs = p.add_subparsers(dest="policy_verb", metavar="eval|run", required=True)
    e = verbs.add_parser("eval", help="what every rule decides now for every live job, and why")
    e.add_argument(
        "--at",
        metavar="TIME",
        help="judge at this time instead (ISO 8601, e.g. 2026-12-07T10:00+08:00; no offset: UTC)",
    )
    e.add_argument(
        "--json", action="store_true", help="a list of decisions (rule, job, from, to, reason, inputs…)"
    )
    r = verbs.add_parser(
        "run", help="the controller: apply decisions (restart-mode resizes), journal each one"
    )
    r.add_argument(
        "--interval", type=float, default=30.0, metavar="S", help="seconds between passes (default 30)"
    )
    r.add_argument("--once", action="store_true", help="one pass, then exit")


def parse_at(text: str) -> float:
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise GpudeckError(
            f"policy eval: --at {text!r}: expected ISO 8601 such as 2026-12-07T10:00+08:00", EXIT_USAGE
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


def controller(session: Session, once: bool = False) -> Controller:
    try:
        policies = load()
    except PolicyError as exc:
        raise GpudeckError(str(exc), EXIT_USAGE) from None
    try:
        hosts = {name: dict(entry.extra) for name, entry in load_hosts().items()}
    except HostsFileError as exc:
        raise GpudeckError(str(exc)) from None

    def resize(job: find.Job, count: int, onto: tuple[str, ...], new_id: str) -> str:
        return scale.scale(session, session.store, job, str(count), new_id=new_id, onto=onto).id

    def move(job: find.Job, hosts: dict[str, str], gpus: int | None) -> str:  # a vertical rule's bigger type
        return scale.scale(
            session, session.store, job, str(len(job.nodes)), move=hosts, nproc_per_node=gpus
        ).id

    def join_pool(path: Path, pool: str, host: str) -> None:  # already there (False) is as good as added
        add_pool_host(path, pool, host)

    cost = session.settings.cost

    def told(
        records: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:  # [notify]: recovered, gave_up, queued_start
        return [tell(session.settings.notify, r) for r in records]

    managed_cloud = ManagedCloud(session, session.settings)  # cloud candidates and the provider's loss signal
    # launches boot in worker threads: a pass never waits on one (tui/policy/inflight.py)
    flights = InFlight(inline=once)

    def launch_candidate(candidate: CloudCandidate, token: str, like: str | None = None) -> str:
        return flights.call(token, managed_cloud.launch, candidate, token, like)

    journal = PolicyJournal()
    capacity = CloudCapacity(session, session.settings)
    queue_capacity = QueueCapacity(
        policies,
        capacity,
        journal,
        Queue(),
        flights,
        jobs=lambda: find.list_jobs(session),
        release=partial(release_host, capacity),
        currency=cost.currency,
        join_pool=None if policies.path is None else partial(join_pool, policies.path),
        leave_pool=None if policies.path is None else partial(remove_pool_host, policies.path),
    )
    return Controller(
        jobs=lambda: listed_and_told(session),
        observer=Observer(session.client, policies, hosts, cost.currency, cost.fx),
        policies=policies,
        journal=journal,
        resize=resize,
        catalog=catalog.entries(),
        capacity=capacity,
        fleet=fleet_budget(session),
        currency=cost.currency,
        join_pool=None if policies.path is None else partial(join_pool, policies.path),
        move=move,
        host_settings=hosts,
        queue_recover=lambda live: recover(Queue(), live),
        queue_pass=lambda: told(
            start_waiting(session, session.store, Queue(), hosts_of=queue_capacity.hosts_of)
        ),
        queue_capacity=queue_capacity,
        flights=flights,
        managed_pass=lambda: told(
            release_unused(  # instances a recovery launched and did not use: given back (cleanup.py)
                managed_pass(
                    session,
                    session.store,
                    ManagedDir(),
                    cloud=launch_candidate,
                    instance_state=managed_cloud.state,
                ),
                ManagedDir(),
                managed_cloud.release,
            )
        ),
    )


def release_host(capacity: CloudCapacity, host: str) -> str:
    """Terminate the instance the queue launched as `host` (hosts.toml gives its provider and id)."""
    try:
        entry = load_hosts().get(host)
    except HostsFileError as exc:
        raise GpudeckError(str(exc)) from None
    if entry is None:
        raise GpudeckError(f"host {host}: not in hosts.toml any more")
    return capacity.release(dict(entry.extra), "terminate")


def listed_and_told(session: Session) -> list[find.Job]:
    """The jobs, for the rules; what the user's side owes [notify] of them is told on the way
    (apprise targets, host_unreachable: tui/notify_late.py)."""
    from ..notify_late import after_listing

    answered: dict[str, bool] = {}
    jobs = find.list_jobs(session, answered=answered)
    after_listing(session.settings.notify, jobs, answered)
    return jobs


def fleet_budget(session: Session) -> Callable[[], tuple[float | None, float | None]] | None:
    """`[cost] daily_budget` left today and the fleet's burn, from the report `gpudeck cost` builds."""
    budget = session.settings.cost.daily_budget
    if budget is None:
        return None

    def figures() -> tuple[float | None, float | None]:
        from .cost import fleet_today

        # its own connections: the report tails every journal from the start and untails them after,
        # which must not cut the controller's own tails
        own = Session(session.on_status)
        try:
            today, burn = fleet_today(own)
        finally:
            own.close()
        return (None if today is None else budget - today), burn

    return figures


def run(args: argparse.Namespace, session: Session) -> int:
    if args.policy_verb == "run" and args.read_only:
        raise GpudeckError("policy run: refused: --read-only (`policy eval` only reads)", EXIT_USAGE)
    if args.policy_verb == "run" and not (math.isfinite(args.interval) and 0 < args.interval <= 86400):
        raise GpudeckError(
            f"policy run: --interval {args.interval:g}: must be seconds from 0 (excluded) to 86400",
            EXIT_USAGE,
        )
    at = parse_at(args.at) if getattr(args, "at", None) else None
    ctl = controller(session, once=bool(getattr(args, "once", False)))
    if not ctl.policies.rules:
        session.notice(f"no rules: write them in {ctl.policies.path} (see the README's Policies section)")
    if args.policy_verb == "eval":
        decisions, _, problems = ctl.evaluate(at)
        for line in problems:
            session.notice(line)
        if ctl.policies.rules and not decisions:
            session.notice("no live job matches a rule (rules name jobs by `jobs` glob or `pool`)")
        if args.json:
            print(json.dumps([d.to_json() for d in decisions], indent=2, default=str))
        else:
            for d in decisions:
                print(_line(d.to_json()))
                print(f"    inputs: {_inputs(d.inputs)}")
        return 0
    session.notice(
        f"policy run: {len(ctl.policies.rules)} rule(s) from {ctl.policies.path}; journal "
        f"{ctl.journal.path}; Ctrl-C stops"
    )
    stop = threading.Event()

    def finish(signum: int, _frame: object) -> None:  # finish the pass under way (a resize is not cut)
        if not stop.is_set():
            session.notice(f"policy run: {signal.Signals(signum).name}: stopping after this pass")
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, finish)
    run_forever(
        ctl, args.interval, lambda record: print(_line(record), flush=True), once=args.once, stop=stop
    )
    return 0


def _line(d: dict[str, Any]) -> str:
    if d.get("kind") == "managed":  # a managed job's recovery (tui/managed)
        job = d.get("job") or {}
        to = f" → {d['to']}" if d.get("to") else ""
        onto = f" on {d.get('to_host') or d.get('onto')}" if d.get("to_host") or d.get("onto") else ""
        why = d.get("why") or d.get("error") or d.get("reason") or ""
        if d.get(
            "candidate"
        ):  # a cloud candidate that could not be launched: which, and whether for capacity
            onto, why = f" {d['candidate']}", f"{'no capacity: ' if d.get('capacity') else ''}{why}"
            if d.get("instance"):  # an instance a recovery made and did not use, given back
                onto = f" {d['instance']} ({d['candidate']})"
            elif d.get("next_try"):  # the candidate's cool-down (tui/managed/backoff.py)
                why += f" (next try {time.strftime('%H:%M:%S', time.localtime(float(d['next_try'])))})"
        return f"managed  {job.get('name', '-')} ({job.get('id', '-')})  {d['outcome']}{to}{onto}  {why}".rstrip()
    if d.get("kind") == "queue":  # a queued job's start (tui/queue)
        job = d.get("job") or {}
        hosts = d.get("hosts") or ([d["host"]] if d.get("host") else [])  # a launched/released instance
        where = f" on {','.join(hosts)}" if hosts else ""
        error = f": {d['error']}" if d.get("error") else ""
        note = f" ({d['note']})" if d.get("note") else ""
        return f"queue  {job.get('name', '-')} ({job.get('id', '-')})  {d['outcome']}{where}{error}{note}"
    job = d["job"]
    outcome = (
        f" [{d['outcome']}{' → ' + d['new_job'] if d.get('new_job') else ''}]" if d.get("outcome") else ""
    )
    error = f": {d['error']}" if d.get("error") else ""
    if d.get("pool_file_error"):
        error += f" (it joins the pool for this run only: {d['pool_file_error']})"
    frm, to = ("-" if v is None else v for v in (d["from"], d["to"]))
    return (
        f"{d['rule']}  {job['name']} ({job['id']})  {frm} → {to}  {d['action']}{outcome}{error}  "
        f"{d['reason']}"
    )


def _inputs(inputs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in inputs.items())
