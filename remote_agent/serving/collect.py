"""serve's `gc` op: one collection of what the host keeps for jobs -- code snapshots and their files
(codestore/gc.py), Python environments (pyenv/gc.py) and the data cache (datafetch/gc.py) -- with one
retention: what no live job uses and nothing used in the last `keep_days` days goes."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Set

from ..codestore.gc import DEFAULT_KEEP_DAYS, collect
from ..codestore.ops import ENDED, CodeOpError, live_snapshots
from ..datafetch.gc import collect_data
from ..pyenv.gc import collect_envs
from ..spec import DataSource, SpecError
from ..storage.layout import job_dir
from ..supervision.jobspec import load_spec


def collect_all(root: Path, keep_days: Any, jobs: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    keep = DEFAULT_KEEP_DAYS if keep_days is None else keep_days
    if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not math.isfinite(keep) or keep < 0:
        raise CodeOpError("keep_days: expected a number of days >= 0, got %r" % (keep_days,))
    listed = list(jobs)
    # a lost job's processes may still run; a job held for debugging (--hold-on-fail) keeps its code,
    # environment and data until its hold ends
    now = time.time()
    live = [j for j in listed if j.get("state") not in ENDED or _held(j, now)]
    out: Dict[str, Any] = {
        "keep_days": float(keep),
        "code": collect(root, float(keep), live_snapshots(listed) | live_snapshots(_as_live(listed, now))),
        "envs": collect_envs(root, float(keep), live_env_keys(live)),
        "data": collect_data(root, float(keep), live_sources(root, live)),
    }
    out["bytes_freed"] = sum(int(out[k]["bytes_freed"]) for k in ("code", "envs", "data"))
    return out


def _as_live(jobs: List[Dict[str, Any]], now: float) -> List[Dict[str, Any]]:
    """Held jobs, as if running: their snapshots are kept."""
    return [dict(j, state="running") for j in jobs if _held(j, now)]


def _held(job: Dict[str, Any], now: float) -> bool:
    until = job.get("held_until")
    return isinstance(until, (int, float)) and not isinstance(until, bool) and until > now


def live_env_keys(live: Iterable[Dict[str, Any]]) -> Set[str]:
    keys = set()
    for job in live:
        env = job.get("environment")
        if isinstance(env, dict) and isinstance(env.get("key"), str):
            keys.add(env["key"])
    return keys


def live_sources(root: Path, live: Iterable[Dict[str, Any]]) -> List[DataSource]:
    """The data sources in live jobs' specs (a spec unreadable now names nothing)."""
    out: List[DataSource] = []
    for job in live:
        try:
            spec = load_spec(job_dir(root, str(job.get("id")), str(job.get("node", "0"))) / "spec.json")
            raw = spec.get("data") or []
            out.extend(DataSource.from_wire(s) for s in raw if isinstance(s, dict))
        except (OSError, ValueError, SpecError):
            continue
    return out
