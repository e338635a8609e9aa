"""One change of a job at a time (issue 29): a resize or a restart claims the whole job on the host
of its first node (remote_agent/serving/transition.py) before it stops anything, checks that no
stop arrived before it relaunches, and commits once the new job runs. A user's stop marks the claim,
so the resize does not relaunch (or stops what it relaunched) and says so; `rm` waits for it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import GpudeckError
from .agents import Agents


def arbiter(nodes: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """(host, node) of the job's first node in rank order: every client picks the same one."""

    def rank(hn: tuple[str, str]) -> tuple[int, str]:
        return (int(hn[1]), hn[1]) if hn[1].isdigit() else (1 << 30, hn[1])

    return min(nodes, key=rank)


@dataclass(frozen=True)
class Claim:
    """A resize's or restart's hold on the job `job` (token: the new job's id)."""

    agents: Agents
    host: str
    job: str
    what: str
    token: str
    verb: str  # how errors start: "scale", "restart"

    def _act(self, act: str) -> Any:
        return self.agents.request(
            self.host, "transition", job=self.job, act=act, what=self.what, token=self.token
        )

    @classmethod
    def begin(
        cls, agents: Agents, job: str, nodes: Iterable[tuple[str, str]], what: str, token: str, verb: str
    ) -> Claim:
        """Refused (before anything is stopped) when another change of the job holds it."""
        claim = cls(agents, arbiter(nodes)[0], job, what, token, verb)
        try:
            claim._act("begin")
        except GpudeckError as exc:
            raise GpudeckError(f"{verb}: {exc}", exc.code) from None
        return claim

    def check(self) -> None:
        """Before relaunching: refused when a stop arrived meanwhile (the claim is then let go)."""
        try:
            self._act("check")
        except GpudeckError as exc:
            self.abort()
            raise GpudeckError(f"{self.verb}: {exc}", exc.code) from None

    def commit(self) -> bool:
        """The new job runs: the old one was restarted as it. False: a stop arrived meanwhile."""
        try:
            self._act("commit")
        except GpudeckError:
            self.abort()
            return False
        return True

    def abort(self) -> None:
        """The change did not happen: the next one may begin."""
        try:
            self._act("abort")
        except GpudeckError as exc:
            self.agents.notice(f"{self.verb}: {self.job}'s claim stays until it goes stale: {exc}")


def mark(agents: Agents, job: str, nodes: Iterable[tuple[str, str]], act: str) -> dict[str, Any]:
    """A user's `stop` (wins over a resize under way) or an `rm` (refused while one is)."""
    answer: dict[str, Any] = agents.request(arbiter(nodes)[0], "transition", job=job, act=act)
    return answer


def node_names(job: Any) -> list[tuple[str, str]]:
    """(host, node) of a found job's nodes (tui/actions/find.py's Job)."""
    return [(str(n["host"]), str(n["node"])) for n in job.nodes]


def stop_relaunched(agents: Agents, job_id: str, name: str, nodes: list[tuple[str, str]]) -> None:
    """A stop arrived while a resize or restart started the new job: the new job stops as well."""
    from .control import JobTarget, NodeTarget, end  # control uses this module: imported when used

    target = JobTarget(job_id, name or job_id, "running", tuple(NodeTarget(h, n) for h, n in nodes))
    end(agents, target, "stop", resizing=True)
