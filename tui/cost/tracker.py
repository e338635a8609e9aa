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
from .ledger import Ledger
from .report import CostContext, build
from .runs import NodeRun, apply, update_from_job
from .settings import HostPrice


class CostTracker:
    def __init__(self, ctx: CostContext | None = None, ledger: Ledger | None = None) -> None:
        self.ctx = ctx or CostContext()
        self.ledger = ledger
        self._hosts: dict[str, HostSnapshot] = {}
        self._prices: dict[str, HostPrice] = {}
        self._runs: dict[tuple[str, str, str], NodeRun] = {}
        self.settings_changed_at: float | None = None  # hosts.toml's mtime: dates a price change seen

    def set_host(self, name: str, price: HostPrice, hello: dict[str, Any] | None = None, offset: float = 0.0,
                 boot_time: float | None = None) -> None:
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

    def on_job(self, host: str, job: dict[str, Any]) -> None:
        run = self._run(host, job["id"], str(job.get("node") or "0"))
        update_from_job(run, job)

    def on_records(self, host: str, job: str, node: str, records: Iterable[dict[str, Any]]) -> None:
        apply(self._run(host, job, node), records)

    def forget(self, host: str, job: str, node: str) -> None:
        self._runs.pop((host, job, node), None)

    def _run(self, host: str, job: str, node: str) -> NodeRun:
        key = (host, job, node)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = NodeRun(job=job, node=node, host=host)
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
        return build(snaps, self._prices, self.ctx, self.ledger, since, runs_by_host=runs,
                     settings_changed_at=self.settings_changed_at)
