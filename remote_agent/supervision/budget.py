"""A job's spend, as its supervisor measures it for the budget rule: price × share over time, following
both as they change while the job runs, and the lead a graceful stop needs to end the job on budget.

- Price: the spec's price holds from the start until the host's price file (`<agent dir>/price.json`,
  written by the `price` op whenever gpudeck sees the host's price change) says otherwise. Each change
  is dated when it happened, so one learned late still prices the seconds since then. A removed price
  (per_hour null) makes the spend unknown from then on: the budget can no longer be enforced, and the
  supervisor says so once.
- Share: recomputed every few seconds from the live jobs beside it (supervisors holding their lock),
  when the host-wide mark that live supervisors changed moved (jobschanged.py: one `stat`, not every
  job's lock, while the host's jobs stay the same).
  On a host without GPUs they split it: 1 / the live jobs. With GPUs each GPU's part of the host
  (1 / the host's GPUs) is split by the live jobs that may use it (their CUDA_VISIBLE_DEVICES, unset:
  all); where that cannot be told (a job on all GPUs beside jobs on some), the launch share holds.
- Lead: the stop must start `lead` seconds before the budget runs out, lead = how long stops took on
  this host (measured from recent journals: stop_requested → final state, the slowest, plus a second),
  never more than the grace period (SIGKILL ends the job then). Before any stop was measured there,
  UNMEASURED_LEAD (a checkpoint-and-exit), within the grace: the grace itself would stop a $1/s job
  with a $50 budget and the default 60 s grace at once.

Standard library only (the agent's rule).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..spec_defaults import DEFAULT_GRACE
from ..storage.journal import tail_records
from .joblock import supervisor_alive
from .jobschanged import Stamp, change_stamp

PRICE_FILE = "price.json"
SHARE_EVERY = 5.0  # seconds between looks at the mark (and, when it moved, counts of the live jobs)
STOPS_MEASURED = 20  # recent journals looked at for stop durations
UNMEASURED_LEAD = 10.0  # seconds: the lead before any stop on the host was measured

Change = Tuple[float, Optional[float], str]  # (at, per_hour or None: removed, currency)


def read_price_changes(path: Path) -> List[Change]:
    """The host's price changes, oldest first; a missing or malformed file is no change at all."""
    try:
        with open(str(path), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return []
    out: List[Change] = []
    for c in body.get("changes") or [] if isinstance(body, dict) else []:
        if not isinstance(c, dict) or not isinstance(c.get("at"), (int, float)):
            continue
        per_hour = c.get("per_hour")
        if per_hour is not None and (
            not isinstance(per_hour, (int, float)) or isinstance(per_hour, bool) or per_hour < 0
        ):
            continue
        out.append(
            (float(c["at"]), None if per_hour is None else float(per_hour), str(c.get("currency") or "USD"))
        )
    return sorted(out, key=lambda c: c[0])


def _lock_held(lock: Path) -> bool:
    """A neighbour's supervisor lives; an unreadable lock counts as none (the share is a best guess)."""
    try:
        return supervisor_alive(lock)
    except OSError:
        return False


def live_neighbours(jobs_root: Path, own: Path) -> List[Path]:
    """Node dirs on this host, other than `own`, whose supervisor is alive (its lock held)."""
    out: List[Path] = []
    try:
        job_entries = list(os.scandir(str(jobs_root)))
    except OSError:
        return out
    for job_entry in job_entries:
        try:
            nodes = list(os.scandir(job_entry.path)) if job_entry.is_dir() else []
        except OSError:
            continue
        for node in nodes:
            path = Path(node.path)
            if path != own and _lock_held(path / "lock"):
                out.append(path)
    return out


def visible_gpus(spec: Mapping[str, Any]) -> Optional[List[str]]:
    """The job's CUDA_VISIBLE_DEVICES entries; None: unset (every GPU of the host)."""
    env = spec.get("env") if isinstance(spec.get("env"), dict) else {}
    value = env.get("CUDA_VISIBLE_DEVICES") if env else None
    if not isinstance(value, str):
        return None
    return [e.strip() for e in value.split(",") if e.strip()]


def _spec_gpus(job_dir: Path) -> Optional[List[str]]:
    try:
        with open(str(job_dir / "spec.json"), "rb") as f:
            spec = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return visible_gpus(spec) if isinstance(spec, dict) else None


def gpu_share(
    mine: Optional[List[str]], launch_share: float, others: List[Optional[List[str]]]
) -> Optional[float]:
    """This job's part of a host with GPUs, beside jobs using `others` (None: all GPUs); None when it
    cannot be told. The host's GPU count follows from the launch share (its GPUs / the host's)."""
    if mine is None:
        return 1.0 / (1 + len(others)) if all(o is None for o in others) else None
    if not mine:
        return None  # CUDA_VISIBLE_DEVICES="": no GPU of its own, it was given the host
    gpus = int(round(len(mine) / launch_share)) if launch_share > 0 else 0
    if gpus < len(mine):
        return None
    return sum(1.0 / gpus / (1 + sum(1 for o in others if o is None or g in o)) for g in mine)


def _stop_seconds(journal: Path) -> Optional[float]:
    """How long this job's stop took: its last stop_requested to its final state (None: no stop)."""
    asked = ended = None
    for rec in tail_records(journal) or []:
        if not isinstance(rec.get("t"), (int, float)):
            continue
        if rec.get("kind") == "event" and rec.get("event") == "stop_requested":
            asked = float(rec["t"])
        elif rec.get("kind") == "state" and rec.get("state") in ("stopped", "killed") and asked is not None:
            ended = float(rec["t"])
    return ended - asked if asked is not None and ended is not None and ended >= asked else None


def measured_stop_seconds(jobs_root: Path, own: Path) -> Optional[float]:
    """The slowest of the host's recent measured stops (None: no stop measured yet)."""
    journals: List[Tuple[float, Path]] = []
    try:
        for job_entry in os.scandir(str(jobs_root)):
            for node in os.scandir(job_entry.path) if job_entry.is_dir() else []:
                journal = Path(node.path) / "events.jsonl"
                if Path(node.path) != own and journal.exists():
                    journals.append((journal.stat().st_mtime, journal))
    except OSError:
        pass
    durations = [
        d for _, j in sorted(journals, reverse=True)[:STOPS_MEASURED] if (d := _stop_seconds(j)) is not None
    ]
    return max(durations) if durations else None


class BudgetMeter:
    def __init__(self, spec: Mapping[str, Any], started: float, files_dir: Optional[Path] = None) -> None:
        price = spec.get("price") or {}
        self.started = started
        self.currency = str(price.get("currency") or "USD")
        self.spec_per_hour = float(price.get("per_hour") or 0.0)
        self.spec_share = float(price.get("share") or 1.0)
        self.dir = files_dir
        root = files_dir.parent.parent if files_dir is not None else None  # agent dir/jobs
        self.price_file = root.parent / PRICE_FILE if root is not None else None
        self._neighbours: Optional[Callable[[], List[Path]]] = (
            (lambda: live_neighbours(root, files_dir)) if root is not None and files_dir is not None else None
        )
        self.gpus = visible_gpus(spec)
        self._gpus_of: Dict[Path, Optional[List[str]]] = {}  # neighbours' specs, read once each
        self.changes: List[Change] = []
        self._price_stamp: Optional[Tuple[int, int, int]] = None
        self.shares: List[Tuple[float, float]] = [(started, self.spec_share)]  # (from, share)
        self.split_by: Optional[str] = None  # "jobs" (no GPU here) or "gpus", once the supervisor knows
        self._next_share = 0.0
        self._agent_dir = root.parent if root is not None else None
        self._live_stamp: Stamp = None  # the mark when the live jobs were last counted
        grace = float(spec.get("grace", DEFAULT_GRACE) if spec.get("grace") is not None else DEFAULT_GRACE)
        measured = (
            measured_stop_seconds(root, files_dir) if root is not None and files_dir is not None else None
        )
        self.measured_stop = measured
        self.lead = min(grace, UNMEASURED_LEAD if measured is None else measured + 1.0)

    # -- inputs, read as they change -----------------------------------------------------------------

    def refresh(self, now: float) -> None:
        if self.price_file is not None:
            try:
                st = self.price_file.stat()
                # The op replaces the file (a new inode): two writes within one clock tick still differ.
                stamp: Optional[Tuple[int, int, int]] = (st.st_ino, st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = None
            if stamp != self._price_stamp:
                self._price_stamp = stamp
                # The spec's price was the host's price at launch: only later changes count.
                self.changes = [c for c in read_price_changes(self.price_file) if c[0] > self.started]
        if self.split_by is not None and self._neighbours is not None and now >= self._next_share:
            self._next_share = now + SHARE_EVERY
            live = change_stamp(self._agent_dir) if self._agent_dir is not None else None
            if live is not None and live == self._live_stamp:
                return  # no supervisor came or went since the last count
            self._live_stamp = live  # read before the count: a change during it is seen next time
            neighbours = self._neighbours()
            if self.split_by == "jobs":
                share: Optional[float] = 1.0 / (1 + len(neighbours))
            else:
                for d in neighbours:
                    if d not in self._gpus_of:
                        self._gpus_of[d] = _spec_gpus(d)
                share = gpu_share(self.gpus, self.spec_share, [self._gpus_of[d] for d in neighbours])
            if share is not None and share != self.shares[-1][1]:
                self.shares.append((now, share))

    def price_at(self, t: float) -> Optional[float]:
        """$/h at moment t in the budget's currency; None: unknown (removed, or another currency)."""
        per_hour: Optional[float] = self.spec_per_hour
        currency = self.currency
        for at, value, cur in self.changes:
            if at > t:
                break
            per_hour, currency = value, cur
        if per_hour is None or currency != self.currency:
            return None
        return per_hour

    def share_at(self, t: float) -> float:
        share = self.shares[0][1]
        for at, value in self.shares:
            if at > t:
                break
            share = value
        return share

    # -- what it adds up to --------------------------------------------------------------------------

    def accrued(self, now: float) -> Tuple[float, Optional[float]]:
        """(spend from the start to now, the moment the price became unknown or None)."""
        cuts = sorted(
            {self.started, now}
            | {at for at, _, _ in self.changes if self.started < at < now}
            | {at for at, _ in self.shares if self.started < at < now}
        )
        total, unknown_since = 0.0, None
        for i in range(len(cuts) - 1):  # (zip's strict= is not in the agent's Python 3.8)
            a, b = cuts[i], cuts[i + 1]
            price = self.price_at(a)
            if price is None:
                unknown_since = a if unknown_since is None else unknown_since
                continue
            total += (b - a) / 3600.0 * price * self.share_at(a)
        if self.price_at(now) is None and unknown_since is None:
            unknown_since = now
        elif self.price_at(now) is not None:
            unknown_since = None  # a price again: the gap is past (it added nothing)
        return total, unknown_since

    def rate_per_s(self, now: float) -> float:
        price = self.price_at(now)
        return 0.0 if price is None else price * self.share_at(now) / 3600.0

    def inputs(self, now: float) -> Dict[str, Any]:
        return {
            "price_per_hour": self.price_at(now),
            "share": round(self.share_at(now), 6),
            "stop_lead_s": round(self.lead, 3),
            "measured_stop_s": self.measured_stop,
        }
