"""The controller's pass over managed jobs: each chain's live job is asked of its own host only
(`jobs` with its id), and one that ended the way its policy recovers from goes on, from its
checkpoint (the same command, arguments and working directory: the trainer resumes from what it
saved, or from its object store on a new host), on the first candidate host that can take it.

- preemption: the job ended `stopped` with reason `preempted…` (the agent's notice watch);
- host-lost: its host has not answered for `lost_after` seconds (one failed look is not a loss);
- failure: the job ended `failed`.
Anything else ends the watching: `exited` (done), a user's stop or kill, `rm`.

An `--elastic` job whose lost nodes do not include node 0 goes on: the survivors are not stopped,
and the replacements join the running job (tui/managed/elastic.py).

Journal first: the recovery's new job id is saved in the record (`pending`) and journaled
(`recovering`) before the launch, so a controller killed in between launches that same id at its
next pass — the agent refuses a second copy of an id — and never a second replacement.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from remote_agent.names import new_job_id

from ..actions.agents import Agents
from ..actions.hold import held_until
from ..actions.launch import Launched, launch
from ..actions.options import LaunchOptions
from ..errors import GpudeckError
from ..policy.inflight import LaunchInFlight
from ..store import Store
from .backoff import cooling, gave_up_why, noted
from .choose import candidates as _candidates
from .choose import replacements as _replacements
from .cloud import CloudLaunch, InstanceState
from .elastic import Join, departed, join_running, rejoin_refused
from .elastic_join import begin_rejoin, finish_rejoin
from .look import look
from .records import Managed, ManagedDir
from .records import journal_record as _record
from .survivors import stop_survivors

Launch = Callable[[Agents, Store | None, LaunchOptions, str], Launched]


def managed_pass(
    agents: Agents,
    store: Store | None,
    mdir: ManagedDir,
    clock: Callable[[], float] = time.time,
    start: Launch = launch,
    cloud: CloudLaunch | None = None,
    instance_state: InstanceState | None = None,
    join: Join = join_running,
) -> list[dict[str, Any]]:
    """`join` launches an elastic job's replacement nodes into the running job. `cloud` launches a cloud candidate's instance as a host (None: cloud candidates are skipped);
    `instance_state` asks a cloud host's provider for its instance's state when the host stops answering."""
    out: list[dict[str, Any]] = []
    with mdir.pass_lock() as mine:
        if not mine:
            return out  # another controller's pass is deciding: one decision per loss
        for m in mdir.all():
            if m.finished is None:
                out.extend(_one(agents, store, mdir, m, clock, start, cloud, instance_state, join))
    return out


def _one(
    agents: Agents,
    store: Store | None,
    mdir: ManagedDir,
    m: Managed,
    clock: Callable[[], float],
    start: Launch,
    cloud: CloudLaunch | None = None,
    instance_state: InstanceState | None = None,
    join: Join = join_running,
) -> list[dict[str, Any]]:
    now = clock()
    if m.pending is not None and m.pending.get("elastic"):  # joins journaled, maybe cut: not twice
        return finish_rejoin(agents, store, mdir, m, join, _record)
    if m.pending is not None:  # a recovery journaled and maybe cut: launch that same id
        return _launch_pending(agents, store, mdir, m, now, start)
    seen, unreachable = look(agents, m, now, instance_state)
    if unreachable != m.unreachable:
        m = m.but(unreachable=unreachable, unreachable_since=min((t for _, t in unreachable), default=None))
        mdir.save(m)
    if seen.kind in ("lost-taken", "lost-host"):
        bad = tuple(dict.fromkeys(m.node_hosts[i] for i in seen.lost))
        return _recover(agents, store, mdir, m, seen.why, now, start, seen.lost, bad, cloud, join)
    if seen.kind == "wait":
        return []  # `lost` nodes: the host's keeper adopts or ends them within seconds
    if seen.kind == "failed":
        if held_until(list(seen.nodes), now):
            return []  # held for debugging (--hold-on-fail): the host is not taken from under the user
        if "failure" in m.policy.recover_on:
            every = tuple(i for i in range(len(m.node_hosts)) if i not in departed(m))
            return _recover(agents, store, mdir, m, seen.why, now, start, every, (), cloud)
    state, reason = seen.state, seen.reason
    finished = "removed (rm)" if state == "removed" else f"{state}{f' ({reason})' if reason else ''}"
    mdir.save(m.but(finished=finished))
    return [] if state == "removed" else [_record("ended", m, state=state, reason=reason or None)]


def _recover(
    agents: Agents,
    store: Store | None,
    mdir: ManagedDir,
    m: Managed,
    why: str,
    now: float,
    start: Launch,
    lost: tuple[int, ...],
    bad: tuple[str, ...] = (),
    cloud: CloudLaunch | None = None,
    join: Join = join_running,
) -> list[dict[str, Any]]:
    if len(m.recoveries) >= m.policy.max_recoveries:
        gave_up = (
            f"gave up after {len(m.recoveries)} recover{'y' if len(m.recoveries) == 1 else 'ies'}: {why}"
        )
        return _give_up(agents, mdir, m, gave_up)
    tried: list[dict[str, Any]] = []
    launched: dict[str, str] = {}
    try:
        hosts = _replacements(agents, m, lost, bad, now, cloud, tried, launched)
    except LaunchInFlight as flight:  # a candidate's instance still boots: asked again at the next pass
        if tried:
            mdir.save(noted(m, tried, now))
        note = [_record("launching", m, why=why, token=flight.token)] if flight.started else []
        return tried + note
    if tried:  # refused launches cool their candidates down (backoff.py), kept before anything else
        m = noted(m, tried, now)
        mdir.save(m)
    if hosts is None:
        if len(_candidates(m, lost, bad, now)) < len(lost):
            return tried + _give_up(agents, mdir, m, f"gave up: no candidate host left ({why})")
        late = gave_up_why(m, now)
        if late:
            return tried + _give_up(agents, mdir, m, f"{late}; {why}")
        cool = cooling(m, now)
        until = f"; next try {time.strftime('%H:%M:%S', time.localtime(min(cool.values())))}" if cool else ""
        return tried + [_record("waiting", m, why=f"{why}; no candidate host answers now{until}")]
    refused = rejoin_refused(m, lost)
    if refused is None:  # elastic: the survivors go on smaller; the replacements join them
        m = begin_rejoin(mdir, m, hosts, lost, why, now, bad, launched)
        onto = ",".join(hosts[i] for i in lost)
        recovering = _record("recovering", m, to=m.current, onto=onto, why=why, elastic=True)
        return [*tried, recovering, *finish_rejoin(agents, store, mdir, m, join, _record)]
    pending = {
        "new_id": new_job_id(),
        "host": hosts[0],
        "hosts": list(hosts),
        "nodes": list(lost),
        "why": why,
        "at": round(now, 3),
        "bad": list(bad),
    }
    if launched:
        pending["launched"] = launched  # host → the cloud candidate it came from (its cool-down)
    if refused:
        pending["how"] = refused  # an elastic job relaunched whole: why it could not go on
    m = m.but(pending=pending)
    mdir.save(m)  # journaled before the launch: a killed controller launches this same id
    onto = ",".join(hosts[i] for i in lost)
    return [*tried, _record("recovering", m, to=pending["new_id"], onto=onto, why=why)] + _launch_pending(
        agents, store, mdir, m, now, start
    )


def _give_up(agents: Agents, mdir: ManagedDir, m: Managed, gave_up: str) -> list[dict[str, Any]]:
    mdir.save(m.but(finished=gave_up))
    agents.notice(f"managed job {m.opts.name or m.head} ({m.current}): {gave_up}")
    return [_record("gave_up", m, why=gave_up)]


def _launch_pending(
    agents: Agents, store: Store | None, mdir: ManagedDir, m: Managed, now: float, start: Launch
) -> list[dict[str, Any]]:
    p = m.pending or {}
    new_id = str(p["new_id"])
    hosts = tuple(str(h) for h in p.get("hosts") or [p["host"]])
    lost = tuple(int(i) for i in p.get("nodes") or range(len(hosts)))
    bad = p.get("bad") or []
    bad = [bad] if isinstance(bad, str) else [str(b) for b in bad]
    old = m.node_hosts
    gone = departed(m)  # nodes an elastic recovery replaced: not the job's any more
    stop_survivors(agents, m, [i for i in range(len(old)) if i not in lost and i not in gone], bad)
    full, hosts = hosts, tuple(h for i, h in enumerate(hosts) if i not in gone)
    opts = replace(
        m.opts, host=hosts[0], hosts=hosts if len(hosts) > 1 else (), pool=(), restart_of=m.current
    )
    try:
        start(agents, store, opts, new_id)
    except GpudeckError as exc:
        if "already exists" not in str(exc):  # a cut launch's id already there: it is launched
            mdir.save(m.but(pending=None))  # tried again at the next pass, with a new id
            return [_record("failed", m, to=new_id, onto=",".join(hosts), error=str(exc))]
    step: dict[str, Any] = {
        "from": m.current,
        "to": new_id,
        "from_host": ",".join(old[i] for i in lost if i < len(old)),
        "to_host": ",".join(full[i] for i in lost if i < len(full)),
        "why": p.get("why"),
        "at": p.get("at"),
    }
    if len(hosts) > 1:
        step["nodes"] = list(lost)
    if bad:
        step["avoid"] = bad[0] if len(bad) == 1 else bad
    if p.get("launched"):
        step["launched"] = p["launched"]
    if p.get("how"):
        step["how"] = p["how"]
    done = m.but(
        current=new_id,
        host=hosts[0],
        hosts=hosts if len(hosts) > 1 else (),
        pending=None,
        unreachable_since=None,
        unreachable=(),
        recoveries=(*m.recoveries, step),
    )
    mdir.save(done)
    return [_record("recovered", done, **{k: v for k, v in step.items() if k != "at"})]
