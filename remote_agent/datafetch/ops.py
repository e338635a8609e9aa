"""serve's `job_data` op: a node's data sources as its spec keeps them (the listing the launch made),
so a restart, a resize or an elastic join presigns the same objects again (the spec holds no URL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

from ..supervision.jobspec import load_spec


class DataOpError(Exception):
    """The message is the answer."""


def job_data(spec_path: Path, job: str, node: str) -> Dict[str, Any]:
    try:
        spec = load_spec(spec_path)
    except FileNotFoundError:  # removed (`gpudeck rm`) since serve first looked at it
        raise DataOpError(
            "job %s (node %s) is no longer on this host: it was removed" % (job, node)
        ) from None
    except (OSError, ValueError) as exc:
        raise DataOpError("job %s: unreadable spec: %s" % (job, exc)) from None
    data = spec.get("data")
    return {"job": job, "node": node, "data": data if isinstance(data, list) else []}
