"""`slurm.json` in each node dir of a Slurm job: its Slurm job id, its script, and (once known) how
Slurm recorded its end, so an ended job is asked about once, not on every listing."""

from __future__ import annotations

import json
import threading
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
