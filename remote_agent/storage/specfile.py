"""A job's spec.json read back as the plain dict it was written as (no checking: it was checked at
launch). Apart from supervision/jobspec.py so that readers (a listing, the client's local `ps`) do not
load the typed spec's dataclasses (remote_agent/spec.py, the largest import of a listing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict


def load_spec(path: Path) -> Dict[str, Any]:
    with open(str(path), "rb") as f:
        spec = json.loads(f.read().decode("utf-8"))
    if not isinstance(spec, dict) or not isinstance(spec.get("argv"), list):
        raise ValueError("not a job spec")
    return spec
