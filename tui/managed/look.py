"""One look at a managed chain's live job: each of its hosts asked once (`jobs` with its id), and
what the answers mean for recovery.

- `lost`: some nodes were taken (ended `stopped`/`killed` with reason `preempted…`) or their host
  has not answered for the policy's `lost_after` (one failed look is no loss) — or, for a host that
  is a cloud instance, its provider says the instance is stopped or terminated (a second signal: a
  loss at once, without waiting): only those nodes are replaced, the others keep their hosts.
- `failed`: every answer is in and the job ended `failed` (a failure recovery keeps every host).
- `ended`: it ended any other way (done, a user's stop, rm'd): the watching ends.
- `wait`: running, starting, a host not yet past `lost_after`, or a node still ending.

An elastic job's nodes that left it and were replaced (tui/managed/elastic.py) are not asked for nor
counted, even when their host answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..actions.agents import Agents
from ..errors import GpudeckError
from ..fleet.states import ENDED, job_state
from .cloud import LOSS_STATES, InstanceState
from .elastic import departed, live
from .records import Managed


@dataclass(frozen=True)
class Look:
    kind: str  # wait | lost | failed | ended
    nodes: tuple[dict[str, Any], ...] = ()  # the answering hosts' node objects
    lost: tuple[int, ...] = ()  # the node indices taken or lost
    why: str = ""
    state: str = ""
    reason: str = ""


def look(
    agents: Agents, m: Managed, now: float, instance_state: InstanceState | None = None
) -> tuple[Look, tuple[tuple[str, float], ...]]:
    """(what the chain's live job looks like, its hosts that do not answer with since when)."""
    hosts = m.node_hosts
    mine, gone_nodes = live(m), departed(m)
    nodes: list[dict[str, Any]] = []
    down: dict[str, float] = {}
    errors: dict[str, str] = {}
    for host in dict.fromkeys(hosts[i] for i in mine):
        try:
            nodes.extend(
                n
                for n in agents.request(host, "jobs", ids=[m.current])["jobs"]
                if isinstance(n, dict) and _index(n) not in gone_nodes
            )
        except GpudeckError as exc:
            since = m.down_since(host)
            down[host] = now if since is None else since
            errors[host] = str(exc)
    unreachable = tuple(down.items())
    recover_on = m.policy.recover_on
    taken = [_index(n) for n in nodes if _preempted(n)] if "preemption" in recover_on else []
    gone_hosts = [h for h, since in down.items() if now - since >= m.policy.lost_after]
    for h in down:  # the provider's word, for a cloud host not yet past lost_after
        said = None if h in gone_hosts or instance_state is None else instance_state(h)
        if said in LOSS_STATES:
            gone_hosts.append(h)
            errors[h] = f"its instance is {said} (the provider says); {errors[h]}"
    gone_hosts = gone_hosts if "host-lost" in recover_on else []
    gone = [i for i in mine if hosts[i] in gone_hosts]
    lost = tuple(sorted({i for i in [*taken, *gone] if 0 <= i < len(hosts)}))
    if lost:
        why = "; ".join(
            [f"host {h} lost: {errors[h]}" for h in gone_hosts]
            + [str(n.get("reason")) for n in nodes if _preempted(n) and taken][:1]
        )
        if len(hosts) > 1:
            why = f"node{'s' * (len(lost) > 1)} {','.join(map(str, lost))}: {why}"
        kind = "lost-taken" if taken else "lost-host"
        return Look(kind, tuple(nodes), lost, why), unreachable
    if down:
        return Look("wait", tuple(nodes)), unreachable
    if not nodes:
        return Look("ended", state="removed", reason="rm"), unreachable
    states = [str(n.get("state")) for n in nodes]
    state = job_state(states)
    if len(nodes) < len(mine) or any(s not in ENDED for s in states):
        return Look("wait", tuple(nodes), state=state), unreachable
    first = next((n for n in nodes if n.get("state") == state), nodes[0])
    reason, cause = str(first.get("reason") or ""), str(first.get("cause") or "")
    if state == "failed":
        return Look("failed", tuple(nodes), why=f"failed: {cause or first.get('exit_code')}", state=state), ()
    return Look("ended", tuple(nodes), state=state, reason=reason), ()


def _preempted(node: dict[str, Any]) -> bool:
    return node.get("state") in ("stopped", "killed") and str(node.get("reason") or "").startswith(
        "preempted"
    )


def _index(node: dict[str, Any]) -> int:
    try:
        return int(str(node.get("node", "0")))
    except ValueError:
        return -1
