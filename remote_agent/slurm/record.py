"""`slurm.json` in each node dir of a Slurm job: its Slurm job id, its script, and (once known) how
Slurm recorded its end, so an ended job is asked about once, not on every listing."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

from ..storage.files import write_private_atomic
from ..storage.jsonio import dumps

RECORD_NAME = "slurm.json"
_write_lock = threading.Lock()  # serve's request threads: the atomic write's temp name is per process


def read_record(node_dir: Path) -> Optional[Dict[str, Any]]:
    try:
        with open(str(node_dir / RECORD_NAME), "rb") as f:
            obj = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("job_id"), str) else None


def write_record(node_dir: Path, record: Dict[str, Any]) -> None:
    with _write_lock:
        write_private_atomic(node_dir / RECORD_NAME, dumps(record).encode("utf-8"))


def note_refused(root: Path, old_job: str, new_id: str, said: str) -> None:
    """A restart or resize of `old_job` whose new allocation sbatch refused: its node 0's record
    says so (`resubmit`), so ps and inspect tell why the chain stops there. Best effort."""
    from ..storage.layout import job_dir

    directory = job_dir(root, old_job, "0")
    record = read_record(directory)
    if record is None:
        return
    try:
        write_record(
            directory, dict(record, resubmit={"as": new_id, "refused": said[:300], "t": time.time()})
        )
        os.utime(str(directory.parent))  # the listing's cache of an ended job is keyed by its dir's mtime
    except OSError:
        pass
