"""Finds jobs: by id, id prefix or name, across the hosts that hold them; merges their nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import EXIT_NO_SUCH_JOB, GpudeckError
from ..fleet.advice import merged_advice
from ..fleet.gpus_held import held_lines, per_node
from ..fleet.states import (
    ACTIVE,
    DEGRADED,
    ENDED,
    cause_order,
    degraded_why,
    job_state,
    left_job,
    regrouped_without_them,
    why,
)
from ..printable import warn
from . import pace
from .agents import Agents
from .fanout import each_at_once
from .hold import held_until

if TYPE_CHECKING:
    from remote_agent.pace.hang import Hang
    from remote_agent.pace.straggler import Straggler
    from remote_agent.spec import Multinode

    from ..store import Store


@dataclass
class Job:
    """A job as the agents describe it now: their per-node job objects, each with its "host"."""

    id: str
    name: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    unreachable: dict[str, str] = field(default_factory=dict)  # host -> why its agent did not answer

    @property
    def state(self) -> str:
        state = job_state(n["state"] for n in self.members)
        return DEGRADED if state in ACTIVE and self.missing else state

    @property
    def members(self) -> list[dict[str, Any]]:
        """The nodes whose states make the job's: all but those that dropped themselves (elastic),
        unless none stayed."""
        return [n for n in self.nodes if not left_job(n.get("reason"))] or self.nodes

    @property
    def plan(self) -> Multinode | None:
        """A multi-node job's plan as its spec keeps it (typed); None for a one-node launch."""
        raw = self.first.get("multinode")
        if not isinstance(raw, dict):  # a one-node job: no typed spec to load (~10 ms of a `ps`)
            return None
        from remote_agent.spec import Multinode

        return Multinode.read(raw)

    @property
    def planned(self) -> int:
        """The node count the job was launched with (what a resize counts from)."""
        plan = self.plan
        return plan.nodes if plan is not None and plan.nodes >= len(self.nodes) else len(self.nodes)

    @property
    def unanswered(self) -> list[tuple[str, str, str]]:
        """(node, host, why) of each node the job's plan places but no agent answered for."""
        plan = self.plan
        hosts = plan.hosts if plan is not None else None
        if not hosts:
            return []
        seen = {str(n["node"]) for n in self.nodes}
        return [
            (str(rank), str(host), self.unreachable.get(str(host), "its agent does not list it"))
            for rank, host in enumerate(hosts)
            if str(rank) not in seen
        ]

    @property
    def missing(self) -> list[tuple[str, str, str]]:
        """The unanswered nodes the job still waits for (it is degraded): all of them, except in an
        elastic job whose survivors re-formed without them (they left it: listed, not missing)."""
        unanswered = self.unanswered
        plan = self.plan
        if unanswered and plan is not None and plan.elastic is not None:
            answering = sum(1 for n in self.nodes if n.get("state") in ACTIVE)
            if regrouped_without_them((n.get("regrouped") for n in self.nodes), answering):
                return []  # the job went on smaller (or a replacement joined)
        return unanswered

    @property
    def ended(self) -> bool:
        """A known ending: nothing of it runs (a lost job may: it can still be stopped)."""
        return self.state in ENDED

    @property
    def ending_node(self) -> dict[str, Any]:
        """The node whose state the job shows (the first node when they agree, unless another
        has a root cause such as an NCCL timeout)."""
        state = job_state(n["state"] for n in self.members)
        same = [n for n in self.members if n["state"] == state]
        return min(same, key=lambda n: cause_order(n.get("cause")))  # the first of the likeliest culprits

    @property
    def why(self) -> str:
        if self.state == DEGRADED:
            return degraded_why(self.missing)
        n = self.ending_node
        return why(self.state, n.get("cause"), n.get("exit_code"), n.get("signal"), n.get("reason"))

    @property
    def first(self) -> dict[str, Any]:
        return self.nodes[0]

    @property
    def stalled(self) -> str | None:
        """Why a node of the job is stalled now (no progress for longer than its pace), or None."""
        return next((str(n["stalled"]) for n in self.nodes if n.get("stalled")), None)

    @property
    def gpus_held(self) -> list[str]:
        """After its end: each GPU a node's agent found still held (`GPU 3 still held by PID …`)."""
        return held_lines(self.nodes)

    @property
    def stragglers(self) -> list[Straggler]:
        """The nodes lagging the others, sustained (remote_agent/pace/straggler.py); [] mostly."""
        return pace.stragglers(self.nodes, self.state == "running")

    @property
    def likely_hang(self) -> Hang | None:
        """While the job is stalled: the node that stopped first (remote_agent/pace/hang.py)."""
        return pace.hang(self.nodes, bool(self.stalled) and not self.ended)

    @property
    def advice(self) -> list[dict[str, Any]]:
        """The job's advice (remote_agent/advice/), one per kind (a GPU's health: per GPU): the first
        node that said it (by its journal's time) is `node`, every node that said it is `nodes`."""
        return merged_advice(self.nodes)

    @property
    def lead(self) -> dict[str, Any]:
        """The node whose output carries the job's progress: node 0, except in an elastic job, where a
        regroup may put rank 0 (the one that prints) on any node: then the node with the latest point."""
        plan = self.plan
        if plan is None or not plan.elastic:
            return self.first
        timed = [n for n in self.nodes if isinstance(n.get("last_t"), (int, float)) and n.get("last")]
        return max(timed, key=lambda n: n["last_t"]) if timed else self.first

    def to_json(self) -> dict[str, Any]:
        """The contract's shape (docs/architecture.md): env values never appear."""
        first, ending = self.first, self.ending_node
        rates = pace.node_rates(self.nodes)
        ended: list[Any] = [n.get("ended_at") for n in self.nodes]
        return {
            "id": self.id,
            "name": self.name,
            "state": self.state,
            "exit_code": ending.get("exit_code"),
            "signal": ending.get("signal"),
            "started_at": min((n["started_at"] for n in self.nodes if n.get("started_at")), default=None),
            "ended_at": max(ended) if ended and all(ended) else None,
            "cause": ending.get("cause"),
            "reason": ending.get("reason"),
            "why": self.why or None,  # null when there is nothing to say, as for cause
            "argv": first.get("argv"),
            "workdir": first.get("workdir"),
            "restart_of": first.get("restart_of"),
            "watch": _watch_json(first.get("watch")),
            # a container job: its image as asked (runtime, mounts…) and the id/digest it ran
            "image": first.get("runtime") if isinstance(first.get("runtime"), dict) else None,
            "container": first.get("container") if isinstance(first.get("container"), dict) else None,
            "resized_from": _resized(first.get("resized_from")),
            "multinode": _without_rank(first.get("multinode"), self.plan),
            # a synced job's snapshot: what a restart or resize runs, whatever changed locally since
            "code": first.get("code") if isinstance(first.get("code"), dict) else None,
            "last": self.lead.get("last") or {},
            "stalled": self.stalled,  # why, while no progress comes for longer than its pace allows
            # after its end: GPUs still held / leftovers killed (remote_agent/gpus/leftover.py)
            "gpus_held": per_node(self.nodes, "gpus_held"),
            "gpus_freed": per_node(self.nodes, "gpus_freed"),
            "held_until": held_until(self.nodes),  # --hold-on-fail: a failed job's node kept until then
            "straggler": pace.straggler_json(self.stragglers),  # a node lagging the others, sustained
            "likely_hang": pace.hang_json(self.likely_hang),  # stalled: the node that stopped first
            "advice": self.advice,  # the seeds' troubleshooting from evidence: {kind, why, evidence, remedies, node, nodes, t}
            "lead_node": str(self.lead.get("node", "0")),  # whose points `last` is (elastic: rank 0's)
            # journal records the agents skipped as malformed (readers are total: skip and count)
            "malformed": sum(n["malformed"] for n in self.nodes if isinstance(n.get("malformed"), int)),
            # bytes of output the nodes' output caps dropped (their gaps; `logs` marks where)
            "output_dropped": sum(output_dropped(n) for n in self.nodes),
            "environment": _environment(first.get("environment")),  # {source, key}: --requirements
            "gpus": first.get("gpus"),  # per node, as asked: {count, model}; null: every GPU
            # a Slurm job (issue 30): its Slurm job id, state, pending reason, node list, script
            "slurm": first.get("slurm") if isinstance(first.get("slurm"), dict) else None,
            "nodes": [
                {
                    "host": n["host"],
                    "node": n["node"],
                    "state": n["state"],
                    "pid": n.get("pid"),
                    "gpus": n.get("gpus_assigned"),  # --gpus: {indices, uuids, names} its host gave it
                    # over the newest straggler window (remote_agent/pace): null where unknown
                    "step_rate": _rounded(rates.get(str(n["node"]), (None, None))[0]),
                    "gpu_util": _rounded(rates.get(str(n["node"]), (None, None))[1]),
                }
                for n in self.nodes
            ]
            + [
                {
                    "host": host,
                    "node": node,
                    "state": "unreachable",
                    "pid": None,
                    "gpus": None,
                    "step_rate": None,
                    "gpu_util": None,
                }
                for node, host, _ in self.unanswered
            ],
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _environment(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    return {k: v if isinstance(v, str) else None for k, v in ((k, value.get(k)) for k in ("source", "key"))}


def output_dropped(node: dict[str, Any]) -> int:
    """Bytes of the node's output.log its output cap dropped (0: none)."""
    gap = node.get("output_gap")
    if isinstance(gap, list) and len(gap) == 2:
        start, end = gap
        if isinstance(start, int) and isinstance(end, int):
            return max(0, end - start)
    return 0


def _resized(came: Any) -> Any:
    """{job, nodes}: the agent's own fields (why, last_step_at) live in the `resized` record."""
    return {k: v for k, v in came.items() if k in ("job", "nodes")} if isinstance(came, dict) else None


def _watch_json(watch: Any) -> dict[str, Any] | None:
    """A watched run's file and pid (gpudeck watch); null for a launched command."""
    return {"path": watch.get("path"), "pid": watch.get("pid")} if isinstance(watch, dict) else None


def _without_rank(raw: Any, plan: Multinode | None) -> Any:
    """The job's plan, the same on every node (its rank and host are the node's); a spec from
    another version that does not read as a plan is shown as it is."""
    if plan is not None:
        return plan.without_place()
    return {k: v for k, v in raw.items() if k not in ("rank", "host")} if isinstance(raw, dict) else None


def list_jobs(
    agents: Agents,
    skipped: list[GpudeckError] | None = None,
    hosts: list[str] | None = None,
    ids: list[str] | None = None,
    answered: dict[str, bool] | None = None,
) -> list[Job]:
    """Jobs on every host (or `hosts`; only the jobs `ids` when given), asked in parallel, newest
    first. A host that cannot answer is named on stderr and skipped (appended to `skipped` when
    given), so one server down hides no other."""

    def ask(host: str) -> list[dict[str, Any]] | GpudeckError:
        try:
            answer = agents.request(host, "jobs") if ids is None else agents.request(host, "jobs", ids=ids)
        except GpudeckError as exc:
            return exc
        jobs: list[dict[str, Any]] = answer["jobs"]  # the agent's contract
        return jobs

    hosts = agents.hosts() if hosts is None else hosts
    answers = each_at_once(ask, hosts, workers=16)
    jobs: dict[str, Job] = {}
    for host, answer in zip(hosts, answers, strict=True):
        if isinstance(answer, GpudeckError):
            if skipped is None:
                warn(f"gpudeck: skipping {host}: {answer}")
            else:
                skipped.append(answer)
            continue
        for obj in answer:
            obj = dict(obj, host=host)
            job = jobs.setdefault(obj["id"], Job(obj["id"], obj.get("name") or "?"))
            job.nodes.append(obj)
    if answered is not None:  # which hosts answered (the user's side's host_unreachable)
        answered.update(
            {host: not isinstance(a, GpudeckError) for host, a in zip(hosts, answers, strict=True)}
        )
    down = {
        host: str(answer)
        for host, answer in zip(hosts, answers, strict=True)
        if isinstance(answer, GpudeckError)
    }
    for job in jobs.values():  # rank order: node "0" (the master, whose output `logs` shows) first
        job.nodes.sort(key=lambda n: (len(str(n.get("node"))), str(n.get("node"))))
        job.unreachable = {h: _bare(why, h) for h, why in down.items()}
    return sorted(jobs.values(), key=lambda j: j.id, reverse=True)


def _bare(text: str, host: str) -> str:
    """The reason without the host's name before it (the caller names the node and its host)."""
    for prefix in (f"host {host} unreachable: ", f"{host}: "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


@runtime_checkable
class KnowsJobs(Protocol):
    """A client with a state.db (the CLI's Session): it knows which hosts hold the jobs it launched."""

    @property
    def job_index(self) -> Store | None: ...


def where_recorded(agents: Agents, ref: str) -> tuple[list[str], list[str]] | None:
    """(job ids, their hosts) that state.db gives for `ref` (an id, a 4+ prefix or a name); None
    when it knows none, or a host it names is no longer configured (then every host is asked)."""
    try:  # (the Session opens state.db on first use: a read-only home says so there, not here)
        store = agents.job_index if isinstance(agents, KnowsJobs) else None
    except GpudeckError:
        return None
    if store is None:
        return None
    records = (
        ([r] if (r := store.get_job(ref)) else [])
        or (store.jobs_with_prefix(ref) if len(ref) >= 4 else [])
        or store.jobs_named(ref)
    )
    if not records:
        return None
    hosts = list(dict.fromkeys(str(n.get("host")) for r in records for n in r.nodes))
    known = set(agents.hosts())
    return ([r.id for r in records], hosts) if hosts and all(h in known for h in hosts) else None


def resolve(agents: Agents, ref: str) -> Job:
    """The job `ref` names. Asked first only where state.db says it is (its hosts, its ids: a job on
    one of 8 hosts costs one host's answer); every host only when that finds nothing."""
    hint = where_recorded(agents, ref)
    if hint is not None:
        ids, hosts = hint
        try:
            job = pick(list_jobs(agents, [], hosts=hosts, ids=ids), ref)
            if job.id.startswith(ref) or not job.ended:
                return job  # by id; or by name, live (an ended one: a live namesake may be elsewhere)
        except GpudeckError:
            pass  # gone from where it was recorded (rm'd, another client's): ask everyone
    skipped: list[GpudeckError] = []
    jobs = list_jobs(agents, skipped)
    try:
        return pick(jobs, ref)
    except GpudeckError as exc:
        if exc.code == EXIT_NO_SUCH_JOB and skipped:
            raise skipped[0] from None  # the job may be on the host we could not ask: say why
        raise


def pick(jobs: list[Job], ref: str) -> Job:
    """An exact id, else a unique id prefix (4+ characters), else a name: its live job, else its
    newest (a restarted job keeps its name). `jobs` may come in any order."""
    exact = [j for j in jobs if j.id == ref]
    if exact:
        return exact[0]
    by_prefix = [j for j in jobs if len(ref) >= 4 and j.id.startswith(ref)]
    if len(by_prefix) == 1:
        return by_prefix[0]
    if len(by_prefix) > 1:
        raise GpudeckError(
            f"job {ref!r} is ambiguous: {', '.join(j.id for j in by_prefix[:5])}", EXIT_NO_SUCH_JOB
        )
    named = sorted((j for j in jobs if j.name == ref), key=lambda j: j.id, reverse=True)  # ids sort by time
    if not named:
        raise GpudeckError(f"no job {ref!r} (see `gpudeck ps --all`)", EXIT_NO_SUCH_JOB)
    live = [j for j in named if not j.ended]
    if len(live) > 1:
        raise GpudeckError(
            f"name {ref!r} matches {len(live)} live jobs: {', '.join(j.id for j in live)}; use an id",
            EXIT_NO_SUCH_JOB,
        )
    return live[0] if live else named[0]
