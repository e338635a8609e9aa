"""A container job's node on a host it is not on yet (a resize onto the pool, an elastic `+1`): the
job's image, pinned to the registry digest its nodes ran where one is known, so every node runs the
same bytes (an image id is only good where that image already is; a digest can be pulled)."""

from __future__ import annotations

from typing import Any

from remote_agent.spec import Container, SpecError

from .options import usage


def pinned_reference(image: str, digest: Any) -> str:
    """`repo:tag` + `sha256:…` → `repo@sha256:…` (a pull by digest); the image as is otherwise."""
    if "@" in image or not (isinstance(digest, str) and digest.startswith("sha256:")):
        return image
    slash = image.rfind("/")
    colon = image.rfind(":")
    return (image[:colon] if colon > slash else image) + "@" + digest


def carried_runtime(first: dict[str, Any], settings: dict[str, Any]) -> Container | None:
    """The job's container for a node on a new host (`settings`: that host's hosts.toml fields)."""
    runtime = first.get("runtime")
    if not isinstance(runtime, dict):
        return None
    ran = first.get("container") if isinstance(first.get("container"), dict) else {}
    wire = dict(runtime, digest=None)  # the id the job ran is not on the new host: its digest is
    wire["image"] = pinned_reference(str(runtime.get("image")), (ran or {}).get("digest"))
    wire["runtime"] = settings.get("container_runtime") or "auto"  # that host's own runtime
    try:
        return Container.from_wire({k: v for k, v in wire.items() if v is not None})
    except SpecError as exc:
        raise usage(f"scale: the job's image: {exc}") from None
