"""Finds jobs: by id, id prefix or name, across the hosts that hold them; merges their nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remote_agent.jobstate import TERMINAL_STATES

from .errors import EXIT_NO_SUCH_JOB, CliError
from .session import Session

TERMINAL = TERMINAL_STATES
# A job is as alive as its liveliest node: one running node keeps the job running.
STATE_RANK = ["running", "starting", "lost", "failed", "killed", "stopped", "exited"]


@dataclass
class Job:
    id: str
    name: str
    nodes: list[dict[str, Any]] = field(default_factory=list)  # agent job objects + "host"

    @property
    def state(self) -> str:
        states = [n["state"] for n in self.nodes]
        return min(states, key=lambda s: STATE_RANK.index(s) if s in STATE_RANK else len(STATE_RANK))

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def first(self) -> dict[str, Any]:
        return self.nodes[0]

    def to_json(self) -> dict[str, Any]:
        """The contract's shape (DESIGN): env values never appear."""
        first = self.first
        ended = [n.get("ended_at") for n in self.nodes]
        return {
            "id": self.id,
            "name": self.name,
            "state": self.state,
            "exit_code": first.get("exit_code"),
            "signal": first.get("signal"),
            "started_at": min((n["started_at"] for n in self.nodes if n.get("started_at")), default=None),
            "ended_at": max(ended) if ended and all(ended) else None,
            "cause": first.get("cause"),
            "reason": first.get("reason"),
            "argv": first.get("argv"),
            "workdir": first.get("workdir"),
            "restart_of": first.get("restart_of"),
            "last": first.get("last") or {},
            "nodes": [
                {"host": n["host"], "node": n["node"], "state": n["state"], "pid": n.get("pid")} for n in self.nodes
            ],
        }


def list_jobs(session: Session, skipped: list[CliError] | None = None) -> list[Job]:
    """Jobs on every host, asked in parallel. A host that cannot answer is named on stderr and
    skipped (appended to `skipped` when given), so one server down does not hide the others."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    def ask(host: str) -> list[dict[str, Any]] | CliError:
        try:
            return session.request(host, "jobs")["jobs"]
        except CliError as exc:
            return exc

    hosts = session.hosts()
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
        answers = list(pool.map(ask, hosts))
    jobs: dict[str, Job] = {}
    for host, answer in zip(hosts, answers, strict=True):
        if isinstance(answer, CliError):
            if skipped is None:
                print(f"gpudeck: skipping {host}: {answer}", file=sys.stderr)
            else:
                skipped.append(answer)
            continue
        for obj in answer:
            obj = dict(obj, host=host)
            job = jobs.setdefault(obj["id"], Job(obj["id"], obj.get("name") or "?"))
            job.nodes.append(obj)
    return sorted(jobs.values(), key=lambda j: j.id, reverse=True)


def resolve(session: Session, ref: str) -> Job:
    skipped: list[CliError] = []
    jobs = list_jobs(session, skipped)
    try:
        return _pick(jobs, ref)
    except CliError as exc:
        if exc.code == EXIT_NO_SUCH_JOB and skipped:
            raise skipped[0] from None  # the job may be on the host we could not ask: say why
        raise


def _pick(jobs: list[Job], ref: str) -> Job:
    exact = [j for j in jobs if j.id == ref]
    if exact:
        return exact[0]
    by_prefix = [j for j in jobs if len(ref) >= 4 and j.id.startswith(ref)]
    if len(by_prefix) == 1:
        return by_prefix[0]
    if len(by_prefix) > 1:
        raise CliError(f"job {ref!r} is ambiguous: {', '.join(j.id for j in by_prefix[:5])}", EXIT_NO_SUCH_JOB)
    named = [j for j in jobs if j.name == ref]
    if not named:
        raise CliError(f"no job {ref!r} (see `gpudeck ps --all`)", EXIT_NO_SUCH_JOB)
    live = [j for j in named if not j.terminal]
    if len(live) > 1:
        raise CliError(f"name {ref!r} matches {len(live)} live jobs: {', '.join(j.id for j in live)}; use an id", EXIT_NO_SUCH_JOB)
    # A restarted job keeps its name: the live one, else the newest, is the one meant.
    return live[0] if live else named[0]
