"""`gpudeck-agent prepare image JOB_DIR`, on the host before a container job with `--requirements`
starts: the image is made present (a missing one pulled, its progress the job's first output) and its
id kept in the node's dir, where `prepare env --in-container` reads it for the environment's key; the
environments dir is made too (the run mounts it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from ..prepare.entry import PrepareError
from ..pyenv.build import envs_root
from ..pyenv.stream import StepFailed, run_step
from ..spec import JobSpec
from ..storage.files import ensure_private_dir, write_private_atomic
from .image import as_image_id, ask_runtime

IMAGE_ID_NAME = "container-image"  # in the node's dir: the id the environment is keyed by


def ensure_image(spec: JobSpec, job_dir: Path, root: Path) -> str:
    """The image id the container will run (`sha256:…`), pulled first when missing; PrepareError
    with the runtime's error line when it cannot be had."""
    assert spec.runtime is not None
    runtime, ref = spec.runtime.runtime, spec.runtime.digest or spec.runtime.image
    image_id = inspect(runtime, ref)
    if image_id is None:
        try:
            run_step([runtime, "pull", ref], os.environ)
        except StepFailed as exc:
            raise PrepareError("container runtime: %s" % exc) from None
        image_id = inspect(runtime, ref)
        if image_id is None:
            raise PrepareError("container runtime: %s pulled, but %s has no image id for it" % (ref, runtime))
    write_private_atomic(job_dir / IMAGE_ID_NAME, (image_id + "\n").encode("ascii"))
    ensure_private_dir(envs_root(root))
    return image_id


def inspect(runtime: str, ref: str) -> Optional[str]:
    return as_image_id(ask_runtime([runtime, "image", "inspect", "--format", "{{.Id}}", ref]))


def recorded_image(job_dir: Path) -> str:
    """The id `prepare image` kept; ValueError when there is none (it did not run)."""
    try:
        text = (job_dir / IMAGE_ID_NAME).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        raise ValueError("no image id recorded for this container job (prepare image did not run)") from None
    if as_image_id(text) != text:
        raise ValueError("%s: not an image id: %r" % (IMAGE_ID_NAME, text[:80]))
    return text
