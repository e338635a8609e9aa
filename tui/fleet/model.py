"""The fleet: every host and job the client knows, fed by the agent client, read by CLI and TUI.

Plain data, no IO and no threads: the caller (the client's reader thread hands batches to the app
thread) applies updates from one thread. Each `apply_*` returns what changed so a UI redraws only
that: "hosts", "job" (new job, node or name), "state", "last", "series", "gpu", "events",
"heartbeat".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..exactly_once import fresh
from .costs import EMPTY, CostBoard
from .hosts import HOST_STATUSES, HostModel, HostStatus, parse_gpu, util_level
from .jobs import JobModel
from .preview import apply_series
from .states import ACTIVE, regrouped_without_them
from .values import finite, integer, text


def _first(checked: tuple[int, float, dict[str, Any]]) -> int:
    return checked[0]


MAX_JOBS = 10_000


@dataclass(frozen=True)
class FleetSummary:
    hosts_up: int
    hosts_total: int
    gpus_busy: int  # GPUs at >= 10 % utilization (not idle) on connected hosts
    gpus_total: int  # GPUs known on every host, reachable or not
    gpus_by_level: dict[str, int]  # idle / moderate / busy, connected hosts only
    jobs_running: int  # starting or running
    jobs_total: int


class Fleet:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.hosts: dict[str, HostModel] = {}
        self.jobs: dict[str, JobModel] = {}
        self.bad_records = 0  # malformed records and objects skipped
        self.costs: CostBoard = EMPTY  # the cost service's latest board (app thread)
        self.proposals: dict[str, list[Any]] = {}  # job id → the rules' proposals for it (policy decisions)
        self._clock = clock  # client clock, for staleness; injectable for tests
        # (host, GPU uuid) -> id of the active job on it; None = rebuild on next use. Dropped when a
        # job appears, goes, changes state or moves a GPU: the fleet view asks per GPU per draw.
        self._gpu_jobs: dict[tuple[str, str], str] | None = None
        # (job, host) -> the ended job's object last merged: an unchanged one is skipped at once.
        self._ended_objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._listed: dict[str, set[str]] = {}  # host -> the job ids its last `jobs` answer listed
        self.removed: set[str] = set()  # jobs gone from every host that listed them (`gpudeck rm`)
        self.queued: list[dict[str, Any]] = []  # this machine's queue (tui/queue/listing.py), in order

    def set_queued(self, entries: list[dict[str, Any]]) -> bool:
        """The queue as last read; True when it changed. A job also listed by a host is its host's
        row already (the controller started it between the two reads)."""
        entries = [e for e in entries if e.get("id") not in self.jobs]
        if entries == self.queued:
            return False
        self.queued = entries
        return True

    # ---- hosts ---------------------------------------------------------------------------------

    def host(self, name: str) -> HostModel:
        h = self.hosts.get(name)
        if h is None:
            h = self.hosts[name] = HostModel(name=name)
        return h

    def _touch(self, name: str) -> tuple[HostModel, float]:
        """The host, stamped as heard from now, and that time."""
        h = self.host(name)
        h.last_update = now = self._clock()
        return h, now

    def set_host_status(
        self, host: str, status: HostStatus, reason: str | None = None, t: float | None = None
    ) -> set[str]:
        if status not in HOST_STATUSES:
            raise ValueError(f"unknown host status {status!r}")  # a caller bug, not remote data
        h = self.host(host)
        return {"hosts"} if h.set_status(status, reason, self._clock() if t is None else t) else set()

    def unreachable_nodes(self, job: JobModel) -> list[tuple[str, str, str]]:
        """(node, host, why) of a running multi-node job's nodes whose host is unreachable: the job
        is `degraded` (states.DEGRADED) and `-` drops them."""
        if not job.active or len(job.nodes) < 2:
            return []
        out = []
        for n in sorted(job.nodes.values(), key=lambda n: (len(n.node), n.node)):
            h = self.hosts.get(n.host)
            if h is not None and h.status == "unreachable":
                out.append((n.node, n.host, h.reason or "no answer"))
        if out and job.placement.elastic:
            gone = {node for node, _, _ in out}
            answering = sum(1 for n in job.nodes.values() if n.state in ACTIVE and n.node not in gone)
            if regrouped_without_them((n.regrouped for n in job.nodes.values()), answering):
                return []  # torchrun went on without them: they left the job
        return out

    def free_gpus(self) -> dict[str, int]:
        """GPUs running no process, per connected host (where a new node may go; hosts without
        GPUs have 0): what the agents' `gpus` answers say, as tui/actions/placement reads them."""
        return {name: sum(1 for g in h.gpus if not g.processes) for name, h in self.hosts.items() if h.up}

    def apply_hello(self, host: str, hello: dict[str, Any]) -> set[str]:
        if not isinstance(hello, dict):
            self.bad_records += 1
            return set()
        h, now = self._touch(host)
        h.apply_hello(hello)
        host_time = finite(hello.get("time"))
        if host_time is not None:  # so runtimes can use the host's clock: now + clock_offset
            h.clock_offset = host_time - now
        return {"hosts"}

    def apply_slurm(self, host: str, report: dict[str, Any]) -> set[str]:
        """A Slurm host's `slurm` report (partitions, GPUs, the user's queue): its cluster panel."""
        if not isinstance(report, dict):
            self.bad_records += 1
            return set()
        h, _ = self._touch(host)
        if report != h.slurm:
            h.slurm = report
            h.version += 1
        return {"hosts"}

    def apply_gpus(self, host: str, sample: dict[str, Any], t: float | None = None) -> set[str]:
        """A `gpus` sample; t is its time for the sparklines (default: now on the client clock)."""
        if not isinstance(sample, dict):
            self.bad_records += 1
            return set()
        h, now = self._touch(host)
        if "history" in sample and not any(len(s) for s in h.util_series.values()):
            gpus = sample.get("gpus")
            parsed = [
                g for i, d in enumerate(gpus if isinstance(gpus, list) else ()) if (g := parse_gpu(d, i))
            ]
            totals = {g.index: g.mem_total_mib for g in parsed if g.mem_total_mib}  # memory % of the ring
            h.apply_history(sample["history"], totals)
        before = (h.sample_t is None, h.gpu_available, len(h.gpus))
        h.apply_sample(sample, now if t is None else t)
        # A sample's numbers are telemetry: drawn with the next telemetry redraw, not 0.1 s after
        # each poll (issue 36: that doubled the redraws under a dense stream). A host's first
        # sample, or GPUs come or gone, is structural.
        return {"gpu"} if before == (False, h.gpu_available, len(h.gpus)) else {"hosts"}

    def job_for_gpu(self, host: str, uuid: str | None) -> JobModel | None:
        """The active job whose journal reports this GPU, for the fleet view's process column."""
        if uuid is None:
            return None
        if self._gpu_jobs is None:
            index: dict[tuple[str, str], str] = {}
            for job in self.jobs.values():
                if job.active:
                    for key, on in job.gpu_host.items():
                        index.setdefault((on, key), job.id)  # the first job in order, as a scan found
            self._gpu_jobs = index
        job_id = self._gpu_jobs.get((host, uuid))
        return self.jobs.get(job_id) if job_id is not None else None

    def _placed(self, changes: set[str], moved: bool) -> None:
        if moved or changes & {"job", "state"}:
            self._gpu_jobs = None

    # ---- jobs ----------------------------------------------------------------------------------

    def _job(self, job_id: str) -> tuple[JobModel, bool]:
        job = self.jobs.get(job_id)
        if job is not None:
            return job, False
        job = self.jobs[job_id] = JobModel(id=job_id)
        self.removed.discard(job_id)  # listed again (a host back from a network split)
        if len(self.jobs) > MAX_JOBS:  # forget the oldest finished job
            old = min((j for j in self.jobs.values() if not j.active), key=lambda j: j.id, default=None)
            if old is not None:
                del self.jobs[old.id]
                for h in old.hosts:
                    self._ended_objects.pop((old.id, h), None)
        self._gpu_jobs = None
        return job, True

    def apply_jobs(self, host: str, jobs: list[dict[str, Any]]) -> set[str]:
        """A `jobs` answer (or one launched/stopped job object) from `host`, merged by job id."""
        self._touch(host)
        changes: set[str] = set()
        for obj in jobs if isinstance(jobs, list) else ():
            job_id = text(obj.get("id"), 64) if isinstance(obj, dict) else None
            if not job_id:
                self.bad_records += 1
                continue
            job, new = self._job(job_id)
            if not new and job.ended and self._ended_objects.get((job_id, host)) == obj:
                continue  # an ended job's object as the last poll gave it (500 of them every poll): nothing new
            got = job.apply_object(obj, host) | ({"job"} if new else set())
            if job.ended:
                self._ended_objects[(job_id, host)] = obj
            else:
                self._ended_objects.pop((job_id, host), None)
            self._placed(got, False)
            changes |= got
        if not isinstance(jobs, list):
            self.bad_records += 1
        return changes

    def forget_unlisted(self, host: str, jobs: object) -> set[str]:
        """After a complete `jobs` answer from `host`: a job its previous answer listed and this one
        does not was removed there. Its nodes on the host go; a job left with none leaves the fleet
        (its id kept in `removed`, so a view open on it can say so)."""
        if not isinstance(jobs, list):
            return set()
        now = {text(o.get("id"), 64) for o in jobs if isinstance(o, dict)}
        before, self._listed[host] = self._listed.get(host, set()), {i for i in now if i}
        changes: set[str] = set()
        for job_id in before - now:
            job = self.jobs.get(job_id)
            if job is None:
                continue
            for name in [n for n, nd in job.nodes.items() if nd.host == host]:
                del job.nodes[name]
            self._ended_objects.pop((job_id, host), None)
            if not job.nodes:
                del self.jobs[job_id]
                self.removed.add(job_id)
            changes |= {"job", "state"}
            self._gpu_jobs = None
        return changes

    def apply_events(
        self, host: str, job_id: str, node: str, records: list[dict[str, Any]], after: int | None = None
    ) -> set[str]:
        """Journal records pushed for (job, node), exactly once (tui/exactly_once.py): records at or
        below the node's last seq are ignored, so a replayed or duplicated batch changes nothing, and
        a batch that would leave a gap is dropped (its re-tail sends it again) — unless the agent
        says the batch accounts for every seq after `after` (the seqs between went with a cut)."""
        if not isinstance(records, list) or text(job_id, 64) != job_id or text(node, 64) != node:
            self.bad_records += 1
            return set()
        self._touch(host)
        if job_id in self.removed and job_id not in self.jobs:
            return set()  # a removed job's last tailed records: it stays gone
        job, new = self._job(job_id)
        changes = {"job"} if new or node not in job.nodes else set()
        n = job.node_for(node, host)
        checked: list[tuple[int, float, dict[str, Any]]] = []
        for rec in records:
            seq = integer(rec.get("seq")) if isinstance(rec, dict) else None
            t = finite(rec.get("t")) if isinstance(rec, dict) else None
            if seq is None or seq < 1 or t is None:
                self.bad_records += 1
                continue
            checked.append((seq, t, rec))
        checked.sort(key=lambda c: c[0])  # upstream sends in order; don't rely on it
        if n.previewed and not job.active and n.behind:
            # An ended job's series came from the agent: its journal, read behind what its last job
            # object summed up, changes nothing shown (the cost tracker, a sink, still reads it).
            n.last_seq = max([n.last_seq] + [seq for seq, _, _ in checked])
            return changes
        gpu_moves = job.gpu_moves
        vouched = after is not None and after <= n.last_seq
        taken = [c for c in checked if c[0] > n.last_seq] if vouched else fresh(checked, n.last_seq, _first)
        for seq, t, rec in taken:  # none when a stale batch leaves a gap
            n.last_seq = seq  # even a malformed record is consumed: resending it won't fix it
            got = job.apply_record(host, n, rec, t)
            if got is None:
                self.bad_records += 1
            else:
                changes |= got
        self._placed(changes, job.gpu_moves != gpu_moves)
        return changes

    def apply_series(self, host: str, job_id: str, node: str, answer: Any) -> set[str]:
        """An agent's `series` answer for (job, node): its journal downsampled (fleet/preview.py)."""
        job = self.jobs.get(job_id)
        n = job.nodes.get(node) if job else None
        if job is None or n is None:
            return set()
        changes, bad = apply_series(job, n, host, answer)
        self.bad_records += bad
        self._placed(changes, "gpu" in changes)
        return changes

    def last_seq(self, job_id: str, node: str) -> int:
        """Where a `tail` for (job, node) resumes."""
        job = self.jobs.get(job_id)
        n = job.nodes.get(node) if job else None
        return n.last_seq if n else 0

    def jobs_sorted(self) -> list[JobModel]:
        """Running (and starting) jobs first, then newest first. Ids are time-sortable and, unlike
        started_at, do not depend on which host's clock wrote them."""
        by_new = sorted(self.jobs.values(), key=lambda j: j.id, reverse=True)
        return sorted(by_new, key=lambda j: not j.active)

    def find_job(self, ref: str) -> list[JobModel]:
        """Jobs matching an id or a name (the CLI's JOB argument); several means ambiguous."""
        if ref in self.jobs:
            return [self.jobs[ref]]
        return [j for j in self.jobs_sorted() if j.name == ref]

    # ---- header --------------------------------------------------------------------------------

    def summary(self) -> FleetSummary:
        levels = {"idle": 0, "moderate": 0, "busy": 0}
        total = 0
        for h in self.hosts.values():
            total += len(h.gpus)
            if h.up:
                for g in h.gpus:
                    levels[util_level(g.util)] += 1
        return FleetSummary(
            hosts_up=sum(h.up for h in self.hosts.values()),
            hosts_total=len(self.hosts),
            gpus_busy=levels["moderate"] + levels["busy"],
            gpus_total=total,
            gpus_by_level=levels,
            jobs_running=sum(j.active for j in self.jobs.values()),
            jobs_total=len(self.jobs),
        )
