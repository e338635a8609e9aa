"""What a job's environment was, for its job object: the spec's source and the key `prepare env` found."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

RECORD_NAME = "environment.json"  # in the job's dir, written by `prepare env`


def environment_of(spec: Mapping[str, Any], job_dir: Path) -> Optional[Dict[str, Any]]:
    """`{"source", "key"}` (key null until the environment is found or built), or None for no environment."""
    wanted = spec.get("environment")
    if not isinstance(wanted, dict):
        return None
    key = None
    try:
        record = json.loads((job_dir / RECORD_NAME).read_text(encoding="utf-8"))
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            key = record["key"]
    except (OSError, ValueError):
        pass  # not prepared yet, or never will be: the key is unknown
    return {"source": wanted.get("source"), "key": key}
