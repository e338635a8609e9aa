"""A container job as its supervisor (or an adopter, or the agent ending an orphan) sees it: the
command line to exec, the `container` events to journal, the cause of a runtime failure, and the
removal after the end. The supervisor calls these at its start and end; everything else about the
job (output, metrics, stop, kill, adoption) is what it is on the bare host."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, List, Mapping, Optional

from ..spec import JobSpec
from .cleanup import remove_job_container
from .command import container_name, host_facts, job_gpus, passed_names, run_argv
from .envfile import remove_env_file, split_names, write_env_file
from .image import image_of, runtime_cause

Append = Callable[..., Any]
RESOLVE_WAIT = 30.0


class ContainerJob:
    def __init__(self, spec: JobSpec, job_dir: Optional[Path] = None) -> None:
        assert spec.runtime is not None
        self.spec = spec
        self.job_dir = job_dir.resolve() if job_dir is not None else None
        self.name = container_name(spec)
        self._resolver: Optional[threading.Thread] = None

    @classmethod
    def of(cls, spec: Mapping[str, Any], job_dir: Optional[Path] = None) -> Optional[ContainerJob]:
        """None for a job on the bare host (or a spec this agent cannot read: it was checked at launch)."""
        typed = JobSpec.read(dict(spec)) if spec.get("runtime") else None
        return cls(typed, job_dir) if typed is not None and typed.runtime is not None else None

    def argv(self, env: Mapping[str, str]) -> List[str]:
        """The run's command line; the variables' values (from `env`, the job's environment) go
        to the node's env file first, never into the runtime's config."""
        gpus = job_gpus(self.spec)
        if self.job_dir is not None:
            write_env_file(self.job_dir, split_names(passed_names(self.spec, gpus))[0], env)
        return run_argv(self.spec, host_facts(), gpus, self.job_dir)

    def started(self, append: Append, running: Callable[[], bool]) -> None:
        """Journal the container (adoption and cleanup find it by name), then, once the runtime
        made it, the image id and digest it runs (a restart pins them)."""
        assert self.spec.runtime is not None
        append(
            "event",
            event="container",
            data={"name": self.name, "runtime": self.spec.runtime.runtime, "image": self.spec.runtime.image},
        )

        def resolve() -> None:
            found = image_of(self.spec, running)
            if found is not None:
                append("event", event="container_image", data=found)

        self._resolver = threading.Thread(target=resolve, name="container-image", daemon=True)
        self._resolver.start()

    def cause(self, exit_code: Optional[int], tail: List[str]) -> Optional[str]:
        return runtime_cause(exit_code, tail)

    def remove(self, append: Optional[Append] = None) -> Optional[str]:
        if self._resolver is not None:  # its record comes before the final state, never after
            self._resolver.join(timeout=RESOLVE_WAIT)
        why = remove_job_container(self.spec)
        remove_env_file(self.job_dir)  # its values are in spec.json only, from now on
        if why and append is not None:
            append("event", event="container_left", data={"name": self.name, "why": why})
        return why
