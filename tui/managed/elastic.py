"""A managed `--elastic` job that loses a node goes on: torchrun's c10d rendezvous re-forms the
survivors at the smaller size by itself, so they are not stopped, and the controller only launches
the replacement, which joins the running rendezvous as `gpudeck scale +1` does (the same job id; the
node list records the move). Node 0's torchrun hosts the rendezvous store (`is_host`): when node 0
is the one lost, the others lose their store too, and the whole job is relaunched from its
checkpoint, as a static job is (tui/managed/recover.py), with the reason in the recovery.

Node names stay each node's index in the record's `hosts`: a replacement is named after the
highest node so far (as `scale +1` names it), and the lost node stays in the list as `departed`
(the recovery step's `nodes`), never asked again nor counted as the job's.

Journal first: the replacement's name and host are saved in `pending` (`elastic`) before the
launch; a controller killed in between finds the node on its host and records it, or launches that
same node — never a second one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..actions.agents import Agents
from ..errors import GpudeckError
from ..store import Store
from .records import Managed

WHOLE = "node 0 held the rendezvous (its c10d store): the whole job relaunched from its checkpoint"

# (agents, store, chain, node name → host of each node to launch, why): they join the running job
Join = Callable[[Agents, Store | None, Managed, dict[str, str], str], None]


def departed(m: Managed) -> frozenset[int]:
    """The nodes of the chain's live job that left it and were replaced by a joining node."""
    out: set[int] = set()
    for r in m.recoveries:
        if r.get("elastic") and r.get("to") == m.current:
            out.update(int(i) for i in r.get("nodes") or () if isinstance(i, int))
    return frozenset(out)


def live(m: Managed) -> list[int]:
    """The indices (= node names) of the live job's nodes that are still its own."""
    gone = departed(m)
    return [i for i in range(len(m.node_hosts)) if i not in gone]


def rejoin_refused(m: Managed, lost: tuple[int, ...]) -> str | None:
    """None when the lost nodes can be replaced by nodes joining the running job; else why not
    (the whole job is relaunched then). A job that is not elastic gets "" (nothing to say)."""
    bounds = m.opts.elastic
    if bounds is None:
        return ""
    if 0 in lost:
        return WHOLE
    if len([i for i in live(m) if i not in lost]) < bounds[0]:
        return f"fewer than --elastic's minimum {bounds[0]} nodes left: the whole job relaunched"
    return None


def plan_rejoin(m: Managed, hosts: tuple[str, ...], lost: tuple[int, ...]) -> dict[str, str]:
    """Each replacement's node name → its host: named after the highest node so far, in order."""
    first = len(m.node_hosts)
    return {str(first + k): hosts[i] for k, i in enumerate(lost)}


def joined_already(agents: Agents, m: Managed, joins: dict[str, str]) -> dict[str, str]:
    """The joins of `pending` that a cut controller already launched (their host lists them)."""
    out = {}
    for node, host in joins.items():
        try:
            listed = agents.request(host, "jobs", ids=[m.current])["jobs"]
        except GpudeckError:
            continue
        if any(isinstance(n, dict) and str(n.get("node")) == node for n in listed):
            out[node] = host
    return out


def step(m: Managed, p: dict[str, Any], joins: dict[str, str]) -> dict[str, Any]:
    """The recovery's record: the same job before and after, the nodes that left and joined."""
    lost = [int(i) for i in p.get("nodes") or ()]
    old = m.node_hosts
    moved = ", ".join(f"node {i} on {old[i]}" for i in lost if i < len(old))
    came = ", ".join(f"node {n} on {h}" for n, h in joins.items())
    out: dict[str, Any] = {
        "from": m.current,
        "to": m.current,
        "from_host": ",".join(old[i] for i in lost if i < len(old)),
        "to_host": ",".join(joins.values()),
        "why": p.get("why"),
        "at": p.get("at"),
        "nodes": lost,
        "joined": list(joins),
        "elastic": True,
        "how": f"elastic: {came} joined the running job in place of {moved}; the others went on smaller",
    }
    bad = p.get("bad") or []
    if bad:
        out["avoid"] = bad[0] if len(bad) == 1 else bad
    if p.get("launched"):
        out["launched"] = p["launched"]
    return out


def join_running(agents: Agents, store: Store | None, m: Managed, joins: dict[str, str], why: str) -> None:
    """`scale +N` of the live job onto the joins' hosts, named as planned (`scale` names a new node
    after the highest it sees: the names below the first join stand in for those not asked)."""
    from ..actions.elastic import scale_elastic  # the CLI's own scale path, loaded when a node joins
    from ..actions.find import list_jobs, pick

    keep = live(m)
    hosts = list(dict.fromkeys(m.node_hosts[i] for i in keep))
    job = pick(list_jobs(agents, [], hosts=hosts, ids=[m.current]), m.current)
    job.nodes = [n for n in job.nodes if _name(n) in keep]  # a departed node's host may hold it yet
    mn = job.plan
    if mn is None or not mn.elastic:
        raise GpudeckError(f"{m.current}: its node 0 does not answer as an elastic job's")
    names = sorted(joins, key=int)
    seen = {str(n.get("node")) for n in job.nodes}
    job.nodes += [
        {"host": "", "node": str(i), "state": "lost"} for i in range(int(names[0])) if str(i) not in seen
    ]
    onto = tuple(joins[n] for n in names)
    scale_elastic(agents, store, job, mn, f"+{len(onto)}", onto, why=f"recovery: {why}")


def _name(node: dict[str, Any]) -> int:
    text = str(node.get("node"))
    return int(text) if text.isdigit() else -1
