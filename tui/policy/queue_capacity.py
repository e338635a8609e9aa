"""The controller launches capacity for the queue: when jobs wait for GPUs their pool cannot give, and
a `[pool.NAME]` holding every host of their `--pool` allows launches with a spend ceiling
(`launch = true`, `max_spend_per_hour`), one instance of the pool's template is launched for the
queue's head, joins the pool once it answers, and the queued job starts there at the next look.

- Never past the ceiling: the instances launched for the queue and still kept, plus the new one,
  cost at most `max_spend_per_hour` (each priced as the capacity prices it: the provider's quote,
  else the catalog). Held back, the queued jobs' reason says so (`gpudeck queue`).
- Journal first: a launch is journaled `launching` with its token (from the queue head's id) before
  the cloud is asked; it runs as in-flight work (inflight.py) and the pass goes on. A controller
  killed mid-launch asks again with the same token at its next start: the same instance, never two.
- Released when idle: an instance launched for the queue that ran no job for the pool's
  `idle_release` (default 10 min) while nothing waits for it is terminated and leaves the pool.

Records are `kind: queue` in the controller's one journal (outcomes `launching`, `launched`,
`launch_failed`, `held`, `released`, `release_failed`), with `pool_name`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..actions.find import Job
from ..cost import catalog
from ..errors import GpudeckError
from ..format import money
from ..queue.entries import Queue, QueueEntry
from ..queue.notes import write_notes
from .capacity import Capacity
from .inflight import InFlight, LaunchInFlight
from .journal import PolicyJournal
from .queue_launches import kept_of, launches_of, queue_record, queue_token
from .rules import Policies, PolicyError, Pool

PoolEdit = Callable[[str, str], object]  # (pool, host): write policies.toml; PolicyError


@dataclass
class QueueCapacity:
    policies: Policies
    capacity: Capacity
    journal: PolicyJournal
    queue: Queue
    flights: InFlight
    jobs: Callable[[], list[Job]]  # the live jobs (asked only while a launched instance is kept)
    release: Callable[[str], str]  # host → the instance terminated; GpudeckError
    clock: Callable[[], float] = time.time
    currency: str = "USD"
    join_pool: PoolEdit | None = None
    leave_pool: PoolEdit | None = None
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # token → its `launching` record
    busy_at: dict[str, float] = field(default_factory=dict)  # launched host → when a job last ran there
    said: set[tuple[str, str, str]] = field(default_factory=set)  # (pool, head, reason) held, journaled
    joined: set[str] = field(default_factory=set)  # pools an instance joined this pass: the queue looks first
    resumed: bool = False

    def pool_for(self, wanted: Sequence[str]) -> Pool | None:
        """The [pool.NAME] that launches for a job queued on `wanted` (its --pool hosts)."""
        return next(
            (
                p
                for p in self.policies.pools.values()
                if p.launch and p.max_spend_per_hour is not None and wanted and set(wanted) <= set(p.hosts)
            ),
            None,
        )

    def hosts_of(self, wanted: tuple[str, ...]) -> tuple[str, ...]:
        """The hosts a queued job may start on: its --pool, then what was launched into that pool."""
        p = self.pool_for(wanted)
        return wanted if p is None else (*wanted, *(h for h in p.hosts if h not in wanted))

    # -- before the queue's pass: finished launches join their pool ----------------------------------

    def before(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self.joined = set()
        if not self.resumed:  # launches a killed controller left under way: asked again, same token
            self.resumed = True
            closed = {
                r.get("token")
                for r in launches_of(self.journal)
                if r.get("outcome") in ("launched", "launch_failed")
            }
            for r in launches_of(self.journal):
                if r.get("outcome") == "launching" and r.get("token") not in closed:
                    self.pending[str(r["token"])] = r
        for token, r in list(self.pending.items()):
            out.extend(self._collect(token, r))
        return out

    def _collect(self, token: str, r: dict[str, Any]) -> list[dict[str, Any]]:
        """The launch for `token` asked: under way (nothing), failed, or joined to its pool."""
        pool = self.policies.pools.get(str(r.get("pool_name")))
        if pool is None:
            del self.pending[token]
            return []
        try:
            got = self.flights.call(token, self.capacity.launch, pool, token)
        except LaunchInFlight:
            return []
        except GpudeckError as exc:
            del self.pending[token]
            return [self._note("launch_failed", r, error=str(exc))]
        del self.pending[token]
        known = self.policies.pools.get(pool.name, pool)
        if got.host not in known.hosts:
            self.policies.pools[pool.name] = replace(known, hosts=(*known.hosts, got.host))
        self.busy_at[got.host] = self.clock()
        self.joined.add(pool.name)
        extra = self._edit(self.join_pool, pool.name, got.host)
        return [self._note("launched", r, host=got.host, instance=got.instance, **extra)]

    # -- after the queue's pass: launch for what still waits, release what idles ---------------------

    def after(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        notes: dict[str, str] = {}
        waiting: dict[str, list[QueueEntry]] = {}
        for e in self.queue.entries():
            p = self.pool_for(e.opts.pool)
            if p is not None:
                waiting.setdefault(p.name, []).append(e)
        for name, entries in waiting.items():
            note, records = self._launch_for(self.policies.pools[name], entries[0])
            out.extend(records)
            for e in entries:
                notes[",".join(e.opts.pool)] = note
        out.extend(self._release_idle(set(waiting)))
        write_notes(notes, self.queue.dir)
        return out

    def _launch_for(self, pool: Pool, head: QueueEntry) -> tuple[str, list[dict[str, Any]]]:
        """(the note the pool's queued jobs get, the records written)."""
        under_way = [r for r in self.pending.values() if r.get("pool_name") == pool.name]
        if under_way:
            return f"an instance of {pool.instance_type} is being launched for the queue ({pool.name})", []
        if pool.name in self.joined:  # the queue starts its jobs there at its next look
            return f"an instance of {pool.instance_type} just joined pool {pool.name}", []
        entry = catalog.find(pool.provider, pool.instance_type)
        if entry is not None and entry.gpus is not None and entry.gpus < head.gpus:
            why = (
                f"no launch: {pool.instance_type} has {entry.gpus} GPU(s), the job asks {head.gpus} per node"
            )
            return self._held(pool, head, why)
        try:
            per_hour = self.capacity.price(pool)
        except GpudeckError as exc:
            return self._held(pool, head, f"no launch: its price could not be had: {exc}")
        kept = kept_of(self.journal, pool.name)
        running = sum(float(r.get("per_hour") or 0.0) for r in kept.values())
        ceiling = float(pool.max_spend_per_hour or 0.0)
        if per_hour is None:
            return self._held(
                pool,
                head,
                f"no launch: the price of {pool.instance_type} is unknown, so the spend ceiling cannot be kept",
            )
        if running + per_hour > ceiling + 1e-9:
            cur = self.currency
            why = (
                f"no launch: the pool's spend ceiling holds it back ({money(running, cur, '/h')} launched + "
                f"{money(per_hour, cur, '/h')} for one more > max_spend_per_hour {money(ceiling, cur, '/h')})"
            )
            return self._held(pool, head, why)
        done = sum(
            1
            for r in launches_of(self.journal)
            if r.get("outcome") == "launched" and (r.get("job") or {}).get("id") == head.id
        )
        token = queue_token(pool.name, head.id, done)
        record = self.journal.note(  # journaled before the cloud is asked: a restart reuses the token
            queue_record(
                self.clock(),
                "launching",
                head,
                pool_name=pool.name,
                token=token,
                per_hour=per_hour,
                launch=pool.instance_type,
                spend_per_hour={"launched": running, "ceiling": ceiling},
            )
        )
        self.pending[token] = record
        # under way (asked again next pass), or done at once (`policy run --once`: the pass waited)
        note = f"an instance of {pool.instance_type} is being launched for the queue ({pool.name})"
        return note, [record, *self._collect(token, record)]

    def _held(self, pool: Pool, head: QueueEntry, why: str) -> tuple[str, list[dict[str, Any]]]:
        key = (pool.name, head.id, why.split("(")[0])
        if key in self.said:
            return why, []
        self.said.add(key)
        return why, [
            self.journal.note(queue_record(self.clock(), "held", head, pool_name=pool.name, note=why))
        ]

    def _release_idle(self, waited_for: set[str]) -> list[dict[str, Any]]:
        kept = {name: kept_of(self.journal, name) for name in self.policies.pools}
        if not any(kept.values()):
            return []
        now = self.clock()
        used = {str(n.get("host")) for j in self.jobs() if not j.ended for n in j.nodes}
        out = []
        for name, hosts in kept.items():
            pool = self.policies.pools[name]
            for host, r in hosts.items():
                if host in used:
                    self.busy_at[host] = now
                    continue
                # first seen by this controller: idle from now (a restart does not make it idle for longer)
                since = max(self.busy_at.setdefault(host, now), float(r.get("t") or 0.0))
                if name in waited_for or now - since < pool.idle_release:
                    continue
                try:
                    instance = self.release(host)
                except GpudeckError as exc:
                    out.append(self._note("release_failed", r, host=host, error=str(exc)))
                    self.busy_at[host] = now  # tried again after another idle_release
                    continue
                known = self.policies.pools[name]
                self.policies.pools[name] = replace(known, hosts=tuple(h for h in known.hosts if h != host))
                extra = self._edit(self.leave_pool, name, host)
                out.append(
                    self._note(
                        "released", r, host=host, instance=instance, idle_s=round(now - since, 1), **extra
                    )
                )
        return out

    def _note(self, outcome: str, launching: dict[str, Any], **extra: Any) -> dict[str, Any]:
        keep = {k: launching.get(k) for k in ("job", "pool", "pool_name", "token", "per_hour", "launch")}
        return self.journal.note(
            {"t": round(self.clock(), 3), "kind": "queue", **keep, "outcome": outcome, **extra}
        )

    @staticmethod
    def _edit(edit: PoolEdit | None, pool: str, host: str) -> dict[str, Any]:
        """policies.toml follows (a restarted controller sees the pool as it is); a file that cannot
        be written does not undo the launch or release: the record says why."""
        if edit is None:
            return {}
        try:
            edit(pool, host)
        except PolicyError as exc:
            return {"pool_file_error": str(exc)}
        return {}
