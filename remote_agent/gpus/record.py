"""A node's GPU assignment as its launch wrote it (`gpus.json` in the node dir, 0600): read by the
supervisor (its `gpus_assigned` event), the job listing and the next launch's choice.
Standard library only (the agent's rule)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

ASSIGNMENT = "gpus.json"


def read_assignment(node_dir: Path) -> Optional[Dict[str, Any]]:
    """A node's assignment ({indices, uuids, names}); None when it asked for none (or it is unreadable)."""
    try:
        with open(str(node_dir / ASSIGNMENT), "rb") as f:
            body = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    ok = (
        isinstance(body, dict)
        and isinstance(body.get("uuids"), list)
        and isinstance(body.get("indices"), list)
    )
    return body if ok else None
