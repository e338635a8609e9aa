"""A job's current picture, folded from its spec and journal; `lost` derived from the free lock."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import costsummary
from .containers.fields import container_fields
from .gpus.record import read_assignment
from .pace.points import add_point, mean_util
from .pyenv.record import environment_of
from .storage.files import write_private_atomic
from .storage.journal import JournalReader
from .storage.jsonio import dumps
from .storage.layout import JobFiles
from .storage.specfile import load_spec
from .supervision.joblock import supervisor_alive as supervisor_alive

TERMINAL_STATES = frozenset(["exited", "failed", "stopped", "killed"])
KNOWN_STATES = TERMINAL_STATES | {"starting", "running"}
NEVER_STARTED_AFTER = 120.0  # a job dir with no supervisor lock this old never started: lost


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> Optional[float]:
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and value == value
        and abs(value) < 1e300
    )
    return value if ok else None


CACHE_NAME = "summary.cache.json"
CACHE_AFTER_BYTES = 1 << 20


CODE_UNKNOWN = "exit code unknown"  # how an end record's cause starts when nobody could see the code


def gpu_entries(value: Any) -> Optional[List[Dict[str, Any]]]:
    """An end record's `gpus_held`/`gpus_freed`: its well-formed entries (at most 64), or None."""
    if not isinstance(value, list):
        return None
    keep = [e for e in value[:64] if isinstance(e, dict) and isinstance(e.get("pid"), int)]
    return keep or None


def is_code_unknown(obj: Dict[str, Any]) -> bool:
    """An `exited` job whose exit code nobody could know (its command was no writer's child)."""
    cause = obj.get("cause")
    return (
        obj.get("state") == "exited"
        and obj.get("exit_code") is None
        and isinstance(cause, str)
        and cause.startswith(CODE_UNKNOWN)
    )


class JobView:
    """Reads only what the journal gained since the last refresh, so `jobs` stays cheap."""

    def __init__(self, job_id: str, node: str, directory: Path) -> None:
        self.files = JobFiles(directory)
        self.reader = JournalReader(self.files.journal)
        self.spec: Optional[Dict[str, Any]] = None
        self.gpus_assigned: Optional[Dict[str, Any]] = None
        self.environment: Optional[Dict[str, Any]] = None  # once its key is known (it never changes)
        self._idle_pct = costsummary.DEFAULT_IDLE_PCT  # the spec's idle threshold, once the spec is read
        self.fields: Dict[str, Any] = {
            "id": job_id,
            "node": node,
            "state": "starting",
            "exit_code": None,
            "signal": None,
            "started_at": None,
            "ended_at": None,
            "pid": None,
            "supervisor_pid": None,
            "cause": None,
            "tail": None,
            "reason": None,
            "last": {},
            "last_t": None,  # when the last point was journaled: an elastic job's lead node is the latest
            "stalled": None,  # why the job is stalled now (no progress for longer than its pace), or None
            "straggler": None,  # why a client named this node the straggler (its journal's), or None
            "likely_hang": None,  # why a client named this node a stall's likely hang, or None
            "pace_steps": [],  # recent [t, step] points, thinned and bounded (pace/points.py)
            "pace_util": [],  # recent [t, mean GPU %] points, the same way
            "advice": [],  # the seeds' troubleshooting from evidence (advice/): {kind, why, evidence, remedies, t}
            "last_seq": 0,
            "malformed": 0,  # records skipped: not the shape their kind needs
            "output_gap": None,  # [from, to): bytes of output.log the output cap dropped
            "container": None,  # a container job's {name, runtime, image, image_id, digest}
            "notice": None,  # a preempted job's provider notice {provider, action, time, seen_at}
            "gpus_held": None,  # after its end: [{gpu, uuid, pid, name, user, mem_mib, ours}] (gpus/leftover.py)
            "held_until": None,  # --hold-on-fail: a failed end's hold (epoch s), until released
            "gpus_freed": None,  # leftovers that held a GPU after the end, killed: [{gpu, pid, name, mem_mib}]
            "cost_summary": costsummary.empty(),  # what the client's cost counters need (costsummary.py)
            # An elastic job's last regroup as this node journaled it: {to: nodes, t}. A client reads
            # a node it cannot reach as having left the job once a later regroup went on without it.
            "regrouped": None,
        }

    def refresh(self) -> Dict[str, Any]:
        if self.spec is None:
            try:
                self.spec = load_spec(self.files.spec)
            except (OSError, ValueError):
                self.spec = None
            self._idle_pct = costsummary.idle_pct(self.spec)
            self._load_cache()
        start, skipped = self.reader.offset, self.reader.skipped
        self._read_to_end()
        obj = self.as_object()
        if obj["state"] == "lost":
            # The lock was free: a supervisor that journaled its end and exited after our read
            # looks lost until that end is read. It writes the end before it lets go of the lock,
            # so a read after seeing the lock free tells the two apart.
            self._read_to_end()
            obj = self.as_object()
        self.fields["malformed"] += self.reader.skipped - skipped  # lines that are no record at all
        obj["malformed"] = self.fields["malformed"]
        if self.reader.offset - start >= CACHE_AFTER_BYTES or (self.terminal and self.reader.offset > start):
            self._save_cache()
        return obj

    def _read_to_end(self) -> None:
        while True:
            before = self.reader.offset
            for record in self.reader.read_new():
                self._fold(record)
            # A read that did not fill its buffer reached the end: a second open + read (inside a
            # followed line's burst) would only find nothing.
            if self.reader.offset == before or not self.reader.more:
                break

    # A week-long journal is tens of MB: every new `serve` (every CLI call) would fold it again.
    # The fold up to an offset is cached beside it; the journal stays the truth (cache is derived).

    def _load_cache(self) -> None:
        try:
            with open(str(self.files.dir / CACHE_NAME), "rb") as f:
                cached = json.loads(f.read().decode("utf-8"))
            offset, fields = cached["offset"], cached["fields"]
            size = os.stat(str(self.files.journal)).st_size
        except (OSError, ValueError, KeyError, TypeError):
            return
        if isinstance(fields, dict) and "cost_summary" not in fields:
            # A fold cached by an agent before cost summaries: kept (refolding a long journal takes
            # minutes), its summary `partial`, so a client reads that journal as it did before.
            fields["cost_summary"] = dict(costsummary.empty(), partial=True)
        if isinstance(fields, dict):
            fields.setdefault("advice", [])  # a fold cached before advice (issue 34)
            fields.setdefault("regrouped", None)  # … or before regroups were kept: read as none seen
        if (
            isinstance(offset, int)
            and 0 < offset <= size
            and isinstance(fields, dict)
            and set(fields) == set(self.fields)
        ):
            self.reader.offset, self.reader.last_seq = offset, fields["last_seq"]
            self.fields = fields

    def _save_cache(self) -> None:
        body = dumps({"offset": self.reader.offset, "fields": self.fields}).encode("utf-8")
        try:
            write_private_atomic(self.files.dir / CACHE_NAME, body)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def _fold(self, record: Dict[str, Any]) -> None:
        """Readers are total: a record of the wrong shape is skipped and counted (`malformed`)."""
        f = self.fields
        f["last_seq"] = record["seq"]
        costsummary.fold(f["cost_summary"], record, self._idle_pct)
        kind = record.get("kind")
        if kind == "state":
            state = record.get("state")
            if not isinstance(state, str) or state not in KNOWN_STATES:
                f["malformed"] += 1
                return
            f["state"] = state
            if state == "starting":
                f["supervisor_pid"] = _int(record.get("supervisor_pid"))
                f["started_at"] = _number(record.get("t"))
            elif state == "running":
                f["pid"] = _int(record.get("pid"))
            elif state in TERMINAL_STATES:
                f["ended_at"] = _number(record.get("t"))
                f["exit_code"] = _int(record.get("exit_code"))
                tail = record.get("tail")
                f["tail"] = (
                    [line for line in tail if isinstance(line, str)] if isinstance(tail, list) else None
                )
                for key in ("signal", "cause", "reason"):
                    value = record.get(key)
                    f[key] = value if isinstance(value, str) else None
                notice = record.get("notice")
                f["notice"] = notice if isinstance(notice, dict) else None
                for key in ("gpus_held", "gpus_freed"):
                    f[key] = gpu_entries(record.get(key))
                f["held_until"] = _number(record.get("held_until"))
        elif kind == "event" and record.get("event") == "adopted":
            # A new supervisor took the lost job over: stop/kill now wake that one.
            data = record.get("data")
            pid = _int(data.get("supervisor_pid")) if isinstance(data, dict) else None
            if pid is None:
                f["malformed"] += 1
            else:
                f["supervisor_pid"] = pid
        elif kind == "event" and record.get("event") == "resized":
            data = record.get("data")
            to, t = (_number(data.get("to")) if isinstance(data, dict) else None), _number(record.get("t"))
            if to is not None and t is not None:
                f["regrouped"] = {"to": int(to), "t": t}
        elif kind == "event" and record.get("event") == "hold_released":
            f["held_until"] = _number(record.get("t"))  # `release` ended it then (supervision/hold.py)
        elif kind == "event" and record.get("event") == "output_dropped":
            # The output cap dropped output.log's [from, to): readers skip it and say so.
            data = record.get("data")
            start, end = (
                (_int(data.get("from")), _int(data.get("to"))) if isinstance(data, dict) else (None, None)
            )
            if start is not None and end is not None and 0 <= start <= end:
                f["output_gap"] = [start, end]
            else:
                f["malformed"] += 1
        elif kind == "event" and record.get("event") in ("stalled", "unstalled"):
            data = record.get("data")
            why = data.get("why") if isinstance(data, dict) else None
            f["stalled"] = (str(why)[:300] if why else "stalled") if record["event"] == "stalled" else None
            if record["event"] == "unstalled":
                f["likely_hang"] = None
        elif kind == "event" and record.get("event") in ("straggler", "unstraggler", "likely_hang"):
            data = record.get("data")
            why = (
                str(data.get("why"))[:300] if isinstance(data, dict) and data.get("why") else record["event"]
            )
            key = "likely_hang" if record["event"] == "likely_hang" else "straggler"
            f[key] = why if record["event"] != "unstraggler" else None
        elif kind == "event" and record.get("event") == "advice":
            advice = advice_of(record)
            if advice is None:
                f["malformed"] += 1
            elif len(f.get("advice") or []) < MAX_ADVICE:
                f["advice"] = list(f.get("advice") or []) + [advice]
        elif kind == "event" and record.get("event") in ("container", "container_image"):
            data = record.get("data")
            if isinstance(data, dict):
                f["container"] = dict(f["container"] or {}, **container_fields(data))
            else:
                f["malformed"] += 1
        elif kind == "gpu":
            add_point(f["pace_util"], record.get("t"), mean_util(record.get("gpus")))
        elif kind == "metric":
            if isinstance(record.get("values"), dict):
                f["last"] = dict(f["last"], **record["values"])
                t = record.get("t")
                if isinstance(t, (int, float)) and not isinstance(t, bool):
                    f["last_t"] = t
                add_point(f["pace_steps"], t, record["values"].get("step"))
            else:
                f["malformed"] += 1
        elif not isinstance(kind, str):
            f["malformed"] += 1

    @property
    def terminal(self) -> bool:
        return self.fields["state"] in TERMINAL_STATES

    def current_state(self) -> str:
        state: str = self.fields["state"]  # _fold only keeps a str of KNOWN_STATES
        if state in TERMINAL_STATES:
            return state
        if self.fields["supervisor_pid"] is None and not supervisor_alive(self.files.lock):
            # The supervisor has not started yet (or has opened its lock but not taken it), or
            # never will (a launch that failed half way): `lost` only once that is sure.
            if self.fields["last_seq"] == 0 and self.files.journal.exists():
                return "lost"  # a writer creates it holding the lock: a journal emptied or cut, unowned
            try:
                age = time.time() - os.stat(str(self.files.dir)).st_mtime
            except OSError:
                return state
            return "lost" if age > NEVER_STARTED_AFTER else state
        return state if supervisor_alive(self.files.lock) else "lost"

    def as_object(self) -> Dict[str, Any]:
        obj = dict(self.fields)
        obj["state"] = self.current_state()
        # An ended node's settled cost figures; a running one's move with its journal (clients tail it).
        obj["cost_summary"] = costsummary.settled(obj["cost_summary"]) if self.terminal else None
        spec = self.spec or {}
        # A running multi-node job's recent progress, for the straggler and hang judgements (pace/):
        # its host's time now, so a reader never subtracts one host's clock from another's. Only
        # where there is another node to compare with (~20 KB a node at 10 steps/s).
        steps, util = obj.pop("pace_steps"), obj.pop("pace_util")
        several = bool(spec.get("multinode") or spec.get("placement"))
        live = several and obj["state"] == "running" and (steps or util)
        obj["pace"] = {"now": time.time(), "steps": steps, "util": util} if live else None
        obj["name"] = spec.get("name")
        obj["argv"] = spec.get("argv")
        obj["workdir"] = spec.get("workdir")
        obj["restart_of"] = spec.get("restart_of")
        obj["multinode"] = spec.get("multinode")
        obj["resized_from"] = spec.get("resized_from")
        obj["created_at"] = spec.get("created_at")
        obj["grace"] = spec.get("grace")
        obj["runtime"] = spec.get("runtime")  # a container job's image, runtime, mounts…
        obj["watch"] = spec.get("watch")  # a watch job: {path, pid, …}; null for a launched command
        obj["code"] = spec.get("code")  # a synced job's snapshot: {snapshot, home, files, bytes, source}
        notify = spec.get("notify")  # the events its end is told of; never the URLs (tokens)
        obj["notify_events"] = notify.get("events") if isinstance(notify, dict) else None
        obj["gpus"] = spec.get("gpus")  # asked per node: {count, model}; null: every GPU (as before --gpus)
        if spec.get("gpus") and self.gpus_assigned is None:  # written once, before the supervisor
            self.gpus_assigned = read_assignment(self.files.dir)
        obj["gpus_assigned"] = self.gpus_assigned  # {indices, uuids, names}: the GPUs the host gave it
        obj["total_steps"] = obj["last"].get("total_steps")
        obj["environment"] = self.environment or environment_of(spec, self.files.dir)
        if obj["environment"] and obj["environment"]["key"]:
            self.environment = obj["environment"]
        # The cost rules this job's supervisor enforces (never env values).
        for key in ("price", "budget", "idle_stop"):
            obj[key] = spec.get(key)
        return obj


MAX_ADVICE = 10  # per node: each kind is said once, a GPU's health once per GPU


def advice_of(record: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """An `advice` event as the job object carries it, or None when it is not that shape."""
    return advice_data(record.get("data"), record.get("t"))


def advice_data(data: Any, t: Any) -> Optional[Dict[str, Any]]:
    """An `advice` event's data (and time) as a node keeps it: here and in the client (tui/fleet)."""
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        return None
    remedies = data.get("remedies")
    evidence = data.get("evidence")
    return {
        "kind": data["kind"][:40],
        "why": str(data.get("why") or "")[:400],
        "evidence": evidence if isinstance(evidence, dict) else {},
        "remedies": [str(r)[:400] for r in remedies[:10]] if isinstance(remedies, list) else [],
        "t": t if isinstance(t, (int, float)) and not isinstance(t, bool) else None,
    }
