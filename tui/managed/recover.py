"""The controller's pass over managed jobs: each chain's live job is asked of its own host only
(`jobs` with its id), and one that ended the way its policy recovers from goes on, from its
checkpoint (the same command, arguments and working directory: the trainer resumes from what it
saved, or from its object store on a new host), on the first candidate host that can take it.

- preemption: the job ended `stopped` with reason `preempted…` (the agent's notice watch);
- host-lost: its host has not answered for `lost_after` seconds (one failed look is not a loss);
- failure: the job ended `failed`.
Anything else ends the watching: `exited` (done), a user's stop or kill, `rm`.

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
from ..actions.placement import free_in
from ..errors import GpudeckError
from ..fleet.states import job_state
from ..store import Store
from .records import Managed, ManagedDir

Launch = Callable[[Agents, Store | None, LaunchOptions, str], Launched]
COOL_DOWN = 600.0  # seconds a host that was just lost or taken is not chosen again


def managed_pass(
    agents: Agents,
    store: Store | None,
    mdir: ManagedDir,
    clock: Callable[[], float] = time.time,
    start: Launch = launch,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with mdir.pass_lock() as mine:
        if not mine:
            return out  # another controller's pass is deciding: one decision per loss
        for m in mdir.all():
            if m.finished is None:
                out.extend(_one(agents, store, mdir, m, clock, start))
    return out


def _one(
    agents: Agents,
    store: Store | None,
    mdir: ManagedDir,
    m: Managed,
    clock: Callable[[], float],
    start: Launch,
) -> list[dict[str, Any]]:
    now = clock()
    if m.pending is not None:  # a recovery journaled and maybe cut: launch that same id
        return _launch_pending(agents, store, mdir, m, now, start)
    try:
        nodes = agents.request(m.host, "jobs", ids=[m.current])["jobs"]
    except GpudeckError as exc:
        since = m.unreachable_since if m.unreachable_since is not None else now
        if since == now:
            mdir.save(m.but(unreachable_since=now))
        if now - since >= m.policy.lost_after and "host-lost" in m.policy.recover_on:
            return _recover(agents, store, mdir, m, f"host {m.host} lost: {exc}", now, start, bad=m.host)
        return []
    if m.unreachable_since is not None:
        m = m.but(unreachable_since=None)
        mdir.save(m)
    if not nodes:
        mdir.save(m.but(finished="removed (rm)"))
        return []
    state = job_state(n["state"] for n in nodes)
    node = nodes[0]
    reason, cause = str(node.get("reason") or ""), str(node.get("cause") or "")
    if state in ("starting", "running", "lost", "degraded", "pending"):
        return []  # `lost`: the host's keeper adopts or ends it within seconds
    if state in ("stopped", "killed") and reason.startswith("preempted"):
        if "preemption" in m.policy.recover_on:
            return _recover(agents, store, mdir, m, reason, now, start, bad=m.host)
    elif state == "failed" and held_until(nodes, now):
        return []  # held for debugging (--hold-on-fail): the host is not taken from under the user
    elif state == "failed" and "failure" in m.policy.recover_on:
        return _recover(agents, store, mdir, m, f"failed: {cause or node.get('exit_code')}", now, start)
    mdir.save(m.but(finished=f"{state}{f' ({reason})' if reason else ''}"))
    return [_record("ended", m, state=state, reason=reason or None)]


def _recover(
    agents: Agents,
    store: Store | None,
    mdir: ManagedDir,
    m: Managed,
    why: str,
    now: float,
    start: Launch,
    bad: str | None = None,
) -> list[dict[str, Any]]:
    if len(m.recoveries) >= m.policy.max_recoveries:
        gave_up = (
            f"gave up after {len(m.recoveries)} recover{'y' if len(m.recoveries) == 1 else 'ies'}: {why}"
        )
        mdir.save(m.but(finished=gave_up))
        agents.notice(f"managed job {m.opts.name or m.head} ({m.current}): {gave_up}")
        return [_record("gave_up", m, why=gave_up)]
    host = _candidate(agents, m, bad, now)
    if host is None:
        if not _candidates(m, bad, now):
            gave_up = f"gave up: no candidate host left ({why})"
            mdir.save(m.but(finished=gave_up))
            agents.notice(f"managed job {m.opts.name or m.head} ({m.current}): {gave_up}")
            return [_record("gave_up", m, why=gave_up)]
        return [_record("waiting", m, why=f"{why}; no candidate host answers now")]
    pending = {"new_id": new_job_id(), "host": host, "why": why, "at": round(now, 3), "bad": bad}
    m = m.but(pending=pending)
    mdir.save(m)  # journaled before the launch: a killed controller launches this same id
    return [_record("recovering", m, to=pending["new_id"], onto=host, why=why)] + _launch_pending(
        agents, store, mdir, m, now, start
    )


def _launch_pending(
    agents: Agents, store: Store | None, mdir: ManagedDir, m: Managed, now: float, start: Launch
) -> list[dict[str, Any]]:
    p = m.pending or {}
    new_id, host = str(p["new_id"]), str(p["host"])
    opts = replace(m.opts, host=host, hosts=(), pool=(), restart_of=m.current)
    try:
        start(agents, store, opts, new_id)
    except GpudeckError as exc:
        if "already exists" not in str(exc):  # a cut launch's id already there: it is launched
            mdir.save(m.but(pending=None))  # tried again at the next pass, with a new id
            return [_record("failed", m, to=new_id, onto=host, error=str(exc))]
    step = {
        "from": m.current,
        "to": new_id,
        "from_host": m.host,
        "to_host": host,
        "why": p.get("why"),
        "at": p.get("at"),
    }
    if p.get("bad"):
        step["avoid"] = p["bad"]
    done = m.but(
        current=new_id, host=host, pending=None, unreachable_since=None, recoveries=(*m.recoveries, step)
    )
    mdir.save(done)
    return [_record("recovered", done, **{k: v for k, v in step.items() if k != "at"})]


def _candidates(m: Managed, bad: str | None, now: float) -> list[str]:
    """The fallback hosts (else the job's own), less one just lost or taken (a cool-down)."""
    avoid = {bad} if bad else set()
    avoid |= {
        str(r["avoid"]) for r in m.recoveries if r.get("avoid") and now - float(r.get("at") or 0) < COOL_DOWN
    }
    return [h for h in (m.policy.fallback or (m.opts.host,)) if h not in avoid]


def _candidate(agents: Agents, m: Managed, bad: str | None, now: float) -> str | None:
    """The first candidate that answers (and has the GPUs free, for a job that asks for some)."""
    for host in _candidates(m, bad, now):
        try:
            sample = agents.request(host, "gpus", assigned=True)
        except GpudeckError:
            continue
        if m.opts.gpus is None or free_in(sample) >= m.opts.gpus.count:
            return host
    return None


def _record(outcome: str, m: Managed, **extra: Any) -> dict[str, Any]:
    return {
        "t": round(time.time(), 3),
        "kind": "managed",
        "outcome": outcome,
        "job": {"id": m.current, "name": m.opts.name or m.head},
        "chain": m.head,
        "recoveries": len(m.recoveries),
        **extra,
    }
