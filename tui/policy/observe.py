"""Gathers the engine's inputs from the live fleet: each live job's journals tailed (metrics the job
printed, its nodes' GPU summaries), its master host's instance and price. The only IO of the rules
besides the controller's scale; blocking, so the TUI would run it in a worker.

Series are kept per job id and bounded to the longest `for` of the rules plus a margin, so a
controller that runs for weeks keeps a constant memory.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..actions.find import Job
from ..errors import GpudeckError
from .inputs import HostInstance, JobFacts, Point, append_bounded
from .rules import HOST_METRICS, Policies

CATCH_UP = 20.0  # seconds a first read of a job's journal may take before it is used as far as it got
KEEP_MARGIN = 120.0


class TailingClient(Protocol):
    events: queue.Queue[tuple[str, str, list[dict[str, Any]]]]

    def tail(self, job: str, node: str, since_seq: int | None = None, timeout: float = 30.0) -> int: ...

    def untail(self, job: str, node: str) -> None: ...


class Observer:
    def __init__(
        self,
        client: Callable[[str], TailingClient],
        policies: Policies,
        host_settings: Mapping[str, Mapping[str, Any]] | None = None,
        currency: str = "USD",
        fx: Mapping[str, float] | None = None,
    ) -> None:
        self.client = client
        self.policies = policies
        self.host_settings = host_settings or {}
        self.currency, self.fx = currency, dict(fx or {})  # [cost]: budgets are judged in `currency`
        self.wanted = {r.metric for r in policies.rules if r.metric and r.metric not in HOST_METRICS}
        self.keep = max((r.hold for r in policies.rules), default=0.0) + KEEP_MARGIN
        self.tailed: dict[tuple[str, str], str] = {}  # (job, node) → host
        self.metrics: dict[str, dict[str, list[Point]]] = {}  # job → metric → points
        self.gpus: dict[
            str, dict[tuple[str, str], list[Point]]
        ] = {}  # job → (host, gpu_util|gpu_mem) → points
        self.skipped = 0  # records that were not what the journal contract says (readers are total)

    # -- reading -----------------------------------------------------------------------------------

    def sync(self, jobs: list[Job]) -> list[str]:
        """Tail every node of these (live) jobs, read what is new; untail jobs no longer given.
        Returns one line per node that could not be read (its host down, say)."""
        problems: list[str] = []
        live = {(j.id, str(n["node"])): n["host"] for j in jobs for n in j.nodes}
        for key in [k for k in self.tailed if k not in live]:
            host = self.tailed.pop(key)
            with contextlib.suppress(GpudeckError, Exception):
                self.client(host).untail(*key)
            self.metrics.pop(key[0], None)
            self.gpus.pop(key[0], None)
        targets: dict[tuple[str, str], int] = {}
        for key, host in live.items():
            if key in self.tailed:
                continue
            try:
                targets[key] = self.client(host).tail(key[0], key[1], since_seq=0)
            except Exception as exc:  # a host down: its jobs are judged on what is known
                problems.append(f"{host}: cannot read job {key[0]} node {key[1]}: {exc}")
                continue
            self.tailed[key] = host
        self._drain(targets)
        return problems

    def _drain(self, targets: dict[tuple[str, str], int]) -> None:
        """Read until every newly tailed node has caught up to its seq at tail time (or CATCH_UP passed),
        then whatever else has arrived."""
        seen = dict.fromkeys(targets, 0)
        hosts = set(self.tailed.values())
        deadline = time.monotonic() + CATCH_UP
        while any(seen[k] < targets[k] for k in targets) and time.monotonic() < deadline:
            got = False
            for host in hosts:
                got |= self._take(host, seen, timeout=0.05)
            if not got:
                time.sleep(0)
        for host in hosts:
            while self._take(host, seen, timeout=0):
                pass

    def _take(self, host: str, seen: dict[tuple[str, str], int], timeout: float) -> bool:
        try:
            client = self.client(host)
            job, node, records = client.events.get(timeout=timeout) if timeout else client.events.get_nowait()
        except (queue.Empty, GpudeckError):
            return False
        if (job, node) not in self.tailed:
            return True  # a node we stopped watching: drop
        for record in records:
            if not isinstance(record, dict):
                self.skipped += 1
                continue
            if isinstance(record.get("seq"), int) and (job, node) in seen:
                seen[(job, node)] = record["seq"]
            self._record(job, host, record)
        return True

    def _record(self, job: str, host: str, record: dict[str, Any]) -> None:
        t = record.get("t")
        if not isinstance(t, (int, float)):
            self.skipped += 1
            return
        if record.get("kind") == "metric" and isinstance(record.get("values"), dict):
            for name, value in record["values"].items():
                if name in self.wanted and isinstance(value, (int, float)) and not isinstance(value, bool):
                    append_bounded(
                        self.metrics.setdefault(job, {}).setdefault(name, []),
                        Point(float(t), float(value)),
                        self.keep,
                    )
        elif record.get("kind") == "gpu" and isinstance(record.get("gpus"), list):
            util, mem = _gpu_summary(record["gpus"])
            series = self.gpus.setdefault(job, {})
            if util is not None:
                append_bounded(series.setdefault((host, "gpu_util"), []), Point(float(t), util), self.keep)
            if mem is not None:
                append_bounded(series.setdefault((host, "gpu_mem"), []), Point(float(t), mem), self.keep)

    # -- views -------------------------------------------------------------------------------------

    def view(self, job: Job, now: float) -> JobFacts:
        hosts = tuple(dict.fromkeys(str(n["host"]) for n in job.nodes))
        first = job.first
        price = first.get("price") if isinstance(first.get("price"), dict) else None
        rate = (
            self._rate(price.get("currency", "USD")) if price else None
        )  # the spec's price and budget → currency
        per_hour = price.get("per_hour") if price and rate is not None else None
        share = price.get("share", 1) if price else 1
        share = share if isinstance(share, (int, float)) and not isinstance(share, bool) and share > 0 else 1
        burn = None
        if isinstance(per_hour, (int, float)) and not isinstance(per_hour, bool) and rate is not None:
            burn = float(per_hour) * share * rate
        budget = first.get("budget")
        budget_left = None
        if (
            burn is not None
            and rate is not None
            and isinstance(budget, (int, float))
            and not isinstance(budget, bool)
        ):
            started = [s for n in job.nodes if isinstance(s := n.get("started_at"), (int, float))]
            spent = sum(
                burn * max(0.0, now - s) / 3600 for s in started
            )  # its share of the price × wall time, per node
            budget_left = float(budget) * rate - spent
        return JobFacts(
            id=job.id,
            name=job.name,
            nodes=len(job.nodes),
            hosts=hosts,
            metrics=self.metrics.get(job.id, {}),
            instance=self._instance(hosts[0]),
            burn_per_node=burn,
            budget_left=budget_left,
            gpu=self.gpus.get(job.id, {}),
        )

    def _rate(self, currency: Any) -> float | None:
        """How many of [cost] currency one unit of `currency` is; None: no fx rate (unknown, not guessed)."""
        if currency == self.currency:
            return 1.0
        rate = self.fx.get(str(currency))
        return float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None

    def _instance(self, host: str) -> HostInstance | None:
        s = self.host_settings.get(host) or {}
        if not s.get("instance_type"):
            return None
        return HostInstance(s.get("provider"), s.get("instance_type"), s.get("region"), s.get("market"))


def _gpu_summary(gpus: list[Any]) -> tuple[float | None, float | None]:
    """A node's GPUs → (mean utilization %, mean memory used %); None where no GPU said."""
    utils = [g["util"] for g in gpus if isinstance(g, dict) and isinstance(g.get("util"), (int, float))]
    mems = [
        100.0 * g["mem_used_mib"] / g["mem_total_mib"]
        for g in gpus
        if isinstance(g, dict)
        and isinstance(g.get("mem_used_mib"), (int, float))
        and isinstance(g.get("mem_total_mib"), (int, float))
        and g["mem_total_mib"] > 0
    ]
    return (sum(utils) / len(utils) if utils else None), (sum(mems) / len(mems) if mems else None)
