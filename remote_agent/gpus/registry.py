"""The host's index of GPU holders (`gpus.holders.json` in the agent dir, 0600): each GPU uuid and
the node (job, node) whose assignment holds it. Each launch that assigns GPUs rewrites it under
`gpus.lock`, so the next launch reads the holders of the host's few GPUs, not every job's dir: a
launch beside 200 jobs costs what it costs beside one (issue 33).

Derived, never trusted alone: each entry is checked against the holder's own `gpus.json` and journal
(an ended or removed holder holds nothing), and a missing or unreadable index is rebuilt from every
node dir once (jobs whose GPUs an older agent assigned are found then).

Standard library only (the agent's rule).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Optional, Tuple

from ..names import is_job_id, is_node
from ..storage.files import write_private_atomic
from ..storage.layout import iter_job_dirs, job_dir
from ..supervision.keeper import ended_by_tail
from .record import read_assignment

INDEX = "gpus.holders.json"

Holder = Tuple[str, str]  # (job id, node)


def live_holders(root: Path) -> Dict[str, Holder]:
    """uuid -> (job, node) for every GPU a live assignment holds on this agent dir."""
    index = _read(root)
    candidates = index if index is not None else _scan(root)
    out: Dict[str, Holder] = {}
    for uuid, (job, node) in candidates.items():
        directory = job_dir(root, job, node)
        found = read_assignment(directory)
        if found is None or uuid not in found["uuids"] or ended_by_tail(directory / "events.jsonl"):
            continue
        out[uuid] = (job, node)
    return out


def write_index(root: Path, holders: Dict[str, Holder]) -> None:
    """The holders after a launch's choice; called under `gpus.lock` only."""
    body = {uuid: [job, node] for uuid, (job, node) in sorted(holders.items())}
    write_private_atomic(root / INDEX, json.dumps(body).encode("utf-8"))


def _read(root: Path) -> Optional[Dict[str, Holder]]:
    try:
        with open(str(root / INDEX), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    out: Dict[str, Holder] = {}
    for uuid, holder in body.items():
        if isinstance(holder, list) and len(holder) == 2 and is_job_id(holder[0]) and is_node(holder[1]):
            out[uuid] = (holder[0], holder[1])
    return out


def _scan(root: Path) -> Dict[str, Holder]:
    """Every node dir's assignment: the index as it would be had every launch written it."""
    out: Dict[str, Holder] = {}
    for job, node, directory in iter_job_dirs(root):
        found = read_assignment(directory)
        for uuid in found["uuids"] if found is not None else []:
            if isinstance(uuid, str):
                out[uuid] = (job, node)
    return out
