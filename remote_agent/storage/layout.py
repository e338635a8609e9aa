"""Where things live in an agent dir (the contracts in docs/architecture.md): agents/, jobs/<job_id>/<node>/."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Tuple, Union

from ..names import is_job_id, is_node

DEFAULT_AGENT_DIR = "~/.gpudeck"


def agent_dir(value: str | None = None) -> Path:
    return Path(os.path.expanduser(value or os.environ.get("GPUDECK_AGENT_DIR") or DEFAULT_AGENT_DIR))


def jobs_root(root: Path) -> Path:
    return root / "jobs"


def work_dir(root: Path, home: str) -> Path:
    """A synced job's working directory (its code's `home` job: restarts and resizes share it)."""
    return root / "work" / home


def job_dir(root: Path, job_id: str, node: str) -> Path:
    return jobs_root(root) / job_id / node


class JobFiles:
    """The files of one (job, node)."""

    def __init__(self, directory: Union[str, Path]) -> None:
        self.dir = Path(directory)
        self.spec = self.dir / "spec.json"
        self.output = self.dir / "output.log"
        self.journal = self.dir / "events.jsonl"
        self.lock = self.dir / "lock"
        self.control = self.dir / "control.json"
        self.autostop = self.dir / "autostop.json"
        self.resize = self.dir / "resize.json"  # a client's note of an elastic resize it started
        self.supervisor_log = self.dir / "supervisor.log"
        self.pace_note = self.dir / "pace.json"  # a client's straggler / likely-hang note (issue 34)


def iter_job_dirs(root: Path) -> Iterator[Tuple[str, str, Path]]:
    """(job_id, node, dir) for every job dir present, skipping anything that is not ours."""
    base = jobs_root(root)
    try:
        job_entries = list(os.scandir(str(base)))
    except FileNotFoundError:
        return
    for job_entry in job_entries:
        if not (is_job_id(job_entry.name) and job_entry.is_dir()):
            continue
        for node_entry in os.scandir(job_entry.path):
            if is_node(node_entry.name) and node_entry.is_dir():
                yield job_entry.name, node_entry.name, Path(node_entry.path)
