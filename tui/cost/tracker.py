"""Live cost counters for the TUI: fed the same job objects and pushed journal batches the fleet
model gets, so burn, accrued and projected move with every batch without re-reading journals.

Not thread-safe by design: feed and read it on one thread (the fleet model's), like the model.
The first feed of a job must start at seq 1 (tail from 0, as the fleet model does on first sight)
or its start time is unknown and it costs nothing until its journal is read whole.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from .collect import HostSnapshot
from .counters import SettledCache
from .ledger import Ledger
from .report import CostContext, ReportMemo, build
from .runs import NodeRun, apply, from_summary, update_from_job
from .settings import HostPrice


class CostTracker:
    def __init__(self, ctx: CostContext | None = None, ledger: Ledger | None = None) -> None:
        self.ctx = ctx or CostContext()
        self.ledger = ledger
        self._hosts: dict[str, HostSnapshot] = {}
        self._prices: dict[str, HostPrice] = {}
        self._runs: dict[tuple[str, str, str], NodeRun] = {}
        self.settings_changed_at: float | None = None  # hosts.toml's mtime: dates a price change seen
        # Per host: bumped whenever a change can move an ended node's figures (see `_shape`), so
        # the ended nodes' figures are kept between reports and only the running ones are priced.
        self._versions: dict[str, int] = {}
        self._settled: dict[str, SettledCache] = {}
        self._memo = ReportMemo()

    def set_host(
        self,
        name: str,
        price: HostPrice,
        hello: dict[str, Any] | None = None,
        offset: float = 0.0,
        boot_time: float | None = None,
    ) -> None:
        """On (re)connect: the host's price, its clock offset and GPUs (from hello)."""
        inventory = (hello or {}).get("gpu") or {}
        uuids = [str(g["uuid"]) for g in inventory.get("gpus") or [] if isinstance(g, dict) and g.get("uuid")]
        self._hosts[name] = HostSnapshot(name, offset, time.time() + offset, uuids, boot_time)
        self._prices[name] = price

    def hosts(self) -> list[str]:
        return list(self._hosts)

    def clock(self, name: str) -> tuple[float, float]:
        """(the host's clock offset, its time now) as of its hello."""
        snap = self._hosts[name]
        return snap.offset, time.time() + snap.offset

    def set_price(self, name: str, price: HostPrice) -> None:
        self._prices[name] = price

    def on_job(self, host: str, job: dict[str, Any]) -> bool:
        """A job object; True when the node's figures are known (its journal fed, or its summary)."""
        run = self._run(host, job["id"], str(job.get("node") or "0"))
        before = _shape(run)
        if not run.summarised and not run.fed:
            from_summary(run, job.get("cost_summary"))
        update_from_job(run, job)
        if _shape(run) != before:
            self._bump(host)
        return run.fed or run.summarised

    def on_records(self, host: str, job: str, node: str, records: Iterable[dict[str, Any]]) -> None:
        run = self._run(host, job, node)
        before = _shape(run)
        apply(run, records)
        if _shape(run) != before:
            self._bump(host)

    def forget(self, host: str, job: str, node: str) -> None:
        if self._runs.pop((host, job, node), None) is not None:
            self._bump(host)

    def _bump(self, host: str) -> None:
        self._versions[host] = self._versions.get(host, 0) + 1

    def _run(self, host: str, job: str, node: str) -> NodeRun:
        key = (host, job, node)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = NodeRun(job=job, node=node, host=host)
            self._bump(host)
        return run

    def report(self, since: float | None = None) -> dict[str, Any]:
        """The `cost --json` shape, for the hosts set so far, priced now."""
        now = time.time()
        snaps = []
        for snap in self._hosts.values():
            snap.host_now = now + snap.offset
            snaps.append(snap)
        runs: dict[str, list[NodeRun]] = {}
        for run in self._runs.values():
            runs.setdefault(run.host, []).append(run)
        settled = (
            None
            if since is not None
            else {
                name: (self._settled.setdefault(name, SettledCache()), self._versions.get(name, 0))
                for name in self._hosts
            }
        )
        return build(
            snaps,
            self._prices,
            self.ctx,
            self.ledger,
            since,
            runs_by_host=runs,
            settings_changed_at=self.settings_changed_at,
            settled=settled,
            memo=self._memo if since is None else None,
        )


def _shape(run: NodeRun) -> tuple[object, ...]:
    """What of a node can move an ended node's figures (its own, or its neighbours' shares): its
    times, state, GPUs, rules and name; once ended, any record (an idle sample, an event); while
    lost, its last record's time (its end). A running node's metric points are not in it: they
    move only its own figures, which are priced at every report anyway."""
    ended = run.end is not None
    return (
        run.start,
        run.end,
        run.state,
        len(run.gpus),
        run.idle_pct,
        run.budget,
        run.name,
        run.reason,
        run.total_steps,
        len(run.events),
        len(run.samples) if ended else None,
        run.step_count if ended else None,
        run.last_t if ended or run.state == "lost" else None,
    )
