"""Managed jobs (`gpudeck run --managed`): what the controller needs to bring a job back on another
host when its own is lost, taken (preempted) or the job fails — kept on this machine, because a lost
host takes the job's spec with it.

One file per chain in `<data dir>/managed/` (dir 0700, files 0600: its options hold the job's env
values, as the host's spec.json does). `current` is the chain's live job; `pending` is a recovery
journaled before it is launched (its new job id chosen first), so a controller killed in between
launches that same id, never a second replacement.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from remote_agent.names import is_job_id

from .. import paths
from ..actions.options import LaunchOptions
from ..queue.entries import options_from_wire, options_to_wire

RECOVER_ON = ("preemption", "host-lost", "failure")
DEFAULT_RECOVER_ON = ("preemption", "host-lost")
DEFAULT_LOST_AFTER = 60.0  # seconds a host must stay unreachable before its job counts as lost
DEFAULT_GIVE_UP_AFTER = 3600.0  # seconds of refused launches (since the first) before the chain gives up
MAX_REFUSED = 200  # refused launches kept per chain (the newest): a bound on the record


@dataclass(frozen=True)
class Policy:
    recover_on: tuple[str, ...] = DEFAULT_RECOVER_ON
    max_recoveries: int = 3
    fallback: tuple[str, ...] = ()  # hosts, in the order they are tried (empty: the job's own)
    lost_after: float = DEFAULT_LOST_AFTER
    give_up_after: float = DEFAULT_GIVE_UP_AFTER


@dataclass(frozen=True)
class Managed:
    head: str  # the chain's first job id (the file's name)
    current: str  # its live job
    host: str  # where the current job's node 0 runs
    opts: LaunchOptions
    policy: Policy
    recoveries: tuple[dict[str, Any], ...] = ()
    # {new_id, host, hosts, nodes, why, at, bad}: journaled, not yet launched
    pending: dict[str, Any] | None = None
    unreachable_since: float | None = None  # when the first of the current job's hosts stopped answering
    finished: str | None = None  # why the chain needs no more watching (ended well, by the user, gave up)
    hosts: tuple[str, ...] = ()  # each node's host, in node order (empty: one node on `host`)
    unreachable: tuple[tuple[str, float], ...] = ()  # (host, since when it has not answered)
    # refused cloud launches, oldest first: {candidate, code, capacity, error, at, next_try}
    # (tui/managed/backoff.py: the cool-downs and the give-up; `inspect` lists them)
    refused: tuple[dict[str, Any], ...] = ()

    @property
    def node_hosts(self) -> tuple[str, ...]:
        return self.hosts or (self.host,)

    def down_since(self, host: str) -> float | None:
        return dict(self.unreachable).get(host)

    def to_wire(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "current": self.current,
            "host": self.host,
            "opts": options_to_wire(self.opts),
            "policy": {
                "recover_on": list(self.policy.recover_on),
                "max_recoveries": self.policy.max_recoveries,
                "fallback": list(self.policy.fallback),
                "lost_after": self.policy.lost_after,
                "give_up_after": self.policy.give_up_after,
            },
            "recoveries": list(self.recoveries),
            "pending": self.pending,
            "unreachable_since": self.unreachable_since,
            "finished": self.finished,
            "hosts": list(self.node_hosts),
            "unreachable": [list(x) for x in self.unreachable],
            "refused": list(self.refused[-MAX_REFUSED:]),
        }

    @classmethod
    def from_wire(cls, obj: Any) -> Managed:
        if not isinstance(obj, dict) or not is_job_id(obj.get("head")) or not is_job_id(obj.get("current")):
            raise ValueError("not a managed job record")
        p = obj.get("policy") or {}
        policy = Policy(
            tuple(str(x) for x in p.get("recover_on") or DEFAULT_RECOVER_ON),
            int(p.get("max_recoveries", 3)),
            tuple(str(x) for x in p.get("fallback") or ()),
            float(p.get("lost_after", DEFAULT_LOST_AFTER)),
            float(p.get("give_up_after", DEFAULT_GIVE_UP_AFTER)),
        )
        return cls(
            obj["head"],
            obj["current"],
            str(obj.get("host") or "local"),
            options_from_wire(obj["opts"]),
            policy,
            tuple(r for r in obj.get("recoveries") or () if isinstance(r, dict)),
            obj.get("pending") if isinstance(obj.get("pending"), dict) else None,
            obj.get("unreachable_since") if isinstance(obj.get("unreachable_since"), (int, float)) else None,
            obj.get("finished") if isinstance(obj.get("finished"), str) else None,
            tuple(str(h) for h in obj.get("hosts") or () if isinstance(h, str)),
            tuple(
                (str(x[0]), float(x[1]))
                for x in obj.get("unreachable") or ()
                if isinstance(x, list) and len(x) == 2 and isinstance(x[1], (int, float))
            ),
            tuple(r for r in obj.get("refused") or () if isinstance(r, dict)),
        )

    def but(self, **changes: Any) -> Managed:
        return replace(self, **changes)


@dataclass
class ManagedDir:
    dir: Path = field(default_factory=lambda: paths.data_dir() / "managed")
    problems: list[str] = field(default_factory=list)

    def save(self, m: Managed) -> None:
        paths.ensure_private(self.dir)
        path = self.dir / f"{m.head}.json"
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(m.to_wire(), f)
        os.replace(tmp, path)  # whole or not at all: a recovery's intent is never half written

    @contextlib.contextmanager
    def pass_lock(self) -> Iterator[bool]:
        """One controller's pass at a time decides recoveries (True: this one holds it)."""
        paths.ensure_private(self.dir)
        fd = os.open(self.dir / "pass.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    def all(self) -> list[Managed]:
        self.problems = []
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            if name.endswith(".json"):
                try:
                    out.append(Managed.from_wire(json.loads((self.dir / name).read_text(encoding="utf-8"))))
                except (OSError, ValueError, TypeError, KeyError) as exc:
                    self.problems.append(f"{self.dir / name}: skipped: {exc}")
        return out

    def of_job(self, job_id: str) -> Managed | None:
        """The chain a job belongs to (its head, current, or one it recovered from)."""
        for m in self.all():
            if job_id in (m.head, m.current) or any(
                job_id in (r.get("from"), r.get("to")) for r in m.recoveries
            ):
                return m
        return None


def parse_recover_on(text: str | None) -> tuple[str, ...]:
    if text is None:
        return DEFAULT_RECOVER_ON
    items = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    bad = [x for x in items if x not in RECOVER_ON]
    if not items or bad:
        raise ValueError(f"--recover-on {text!r}: a comma-separated list of {', '.join(RECOVER_ON)}")
    return items


def journal_record(outcome: str, m: Managed, **extra: Any) -> dict[str, Any]:
    """One line of the controller's journal about a managed chain (recover.py, cleanup.py)."""
    return {
        "t": round(time.time(), 3),
        "kind": "managed",
        "outcome": outcome,
        "job": {"id": m.current, "name": m.opts.name or m.head},
        "chain": m.head,
        "recoveries": len(m.recoveries),
        **extra,
    }
