"""The image a container job really ran: its id (what a restart pins) and its registry digest,
read from the runtime once the container exists, and the runtime's own failures as a job's cause."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional

from ..spec import JobSpec
from .command import container_name

INSPECT_TIMEOUT = 20.0
POLL = 0.2
RUNTIME_FAILURES = (
    125,
    126,
    127,
)  # the run itself failed (pull, name, flags), or the command could not start


def ask_runtime(argv: List[str]) -> Optional[str]:
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=INSPECT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else None


def image_of(spec: JobSpec, running: Callable[[], bool]) -> Optional[Dict[str, Any]]:
    """{image, image_id, digest} once the container exists; None if the job ended first."""
    assert spec.runtime is not None
    runtime, name = spec.runtime.runtime, container_name(spec)
    image_id = None
    while image_id is None:
        # Empty or odd while the runtime is still making (or already removing) the container.
        image_id = as_image_id(ask_runtime([runtime, "container", "inspect", "--format", "{{.Image}}", name]))
        if image_id is None:
            if not running():
                # Gone already (a short job, --rm): the image it ran is the one the name gives now.
                ref = spec.runtime.digest or spec.runtime.image
                image_id = as_image_id(ask_runtime([runtime, "image", "inspect", "--format", "{{.Id}}", ref]))
                if image_id is None:
                    return None
                break
            time.sleep(POLL)
    digests = ask_runtime([runtime, "image", "inspect", "--format", "{{json .RepoDigests}}", image_id])
    try:
        listed = json.loads(digests) if digests else []
    except ValueError:
        listed = []
    digest = next((d.split("@", 1)[1] for d in listed or [] if isinstance(d, str) and "@" in d), None)
    return {"image": spec.runtime.image, "image_id": image_id, "digest": digest}


def as_image_id(text: Optional[str]) -> Optional[str]:
    """`sha256:<64 hex>` from what a runtime prints (podman: bare hex; docker: prefixed), else None."""
    hexpart = (text or "").strip()
    hexpart = hexpart[7:] if hexpart.startswith("sha256:") else hexpart
    if len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart):
        return "sha256:" + hexpart
    return None


def runtime_cause(exit_code: Optional[int], tail: List[str]) -> Optional[str]:
    """A run that failed in the runtime (a pull refused by the registry, a bad flag): its `Error` line."""
    if exit_code not in RUNTIME_FAILURES:
        return None
    for line in reversed(tail):
        text = line.strip()
        if "Error" in text or "error" in text:
            return "container runtime: %s" % text[:380]
    return None
