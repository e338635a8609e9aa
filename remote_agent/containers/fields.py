"""What readers keep of a job's `container` and `container_image` events (jobstate's fold)."""

from __future__ import annotations

from typing import Any, Dict

KEPT = ("name", "runtime", "image", "image_id", "digest")


def container_fields(data: Dict[str, Any]) -> Dict[str, str]:
    """Strings only, bounded: a reader survives any shape."""
    return {k: data[k][:512] for k in KEPT if isinstance(data.get(k), str)}


def pin_image(spec: Dict[str, Any], container: Any) -> None:
    """A restart (or a resize's new nodes) runs the image id the job ran, not whatever the tag
    points at now: the spec's runtime gets the journaled id as its digest."""
    runtime = spec.get("runtime")
    if not isinstance(runtime, dict) or runtime.get("digest") or not isinstance(container, dict):
        return
    image_id = container.get("image_id")
    if isinstance(image_id, str) and len(image_id) == 71 and image_id.startswith("sha256:"):
        spec["runtime"] = dict(runtime, digest=image_id)
