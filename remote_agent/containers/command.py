"""The runtime's foreground client as a job's command: `podman|docker run --rm … IMAGE` around the
user's argv, with gpudeck's PID 1 (wrapper.py) in front of it. The host's facts it needs (uid, memory,
limits, GPUs) are gathered by `host_facts`; building the argv is pure."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from ..spec import Container, JobSpec, SpecError
from ..supervision.proctree import JOB_MARKER_VAR
from .envfile import MOUNTED_AT, env_file, split_names
from .host import RuntimeMissing, cdi_devices, gpu_kind, gpu_passing, host_gpu_indices, resolve_runtime
from .wrapper import INIT_SCRIPT

# Set by the supervisor for every job (supervision/jobspec.py job_env); passed by name, like the
# user's variables: the values reach the container from the client's environment, never its argv.
JOB_VARIABLES = ("PYTHONUNBUFFERED", "GPUDECK_JOB_ID", "GPUDECK_JOB_NAME", "GPUDECK_NODE", JOB_MARKER_VAR)
SHELL = "/bin/sh"
PODMAN_NOFILE = 1048576  # podman's own defaults (FACTS.md: this machine's hard limits are lower)
PODMAN_NPROC = 32768


@dataclass(frozen=True)
class HostFacts:
    uid: int
    gid: int
    memory_bytes: Optional[int]
    nofile: Optional[int]  # the hard limits: the runtime's defaults may exceed them (FACTS.md)
    nproc: Optional[int]
    cdi_kind: Optional[str]


def container_name(spec: JobSpec) -> str:
    """The job node's container: found by name after any loss (adoption, cleanup, `rm`)."""
    return "gpudeck-%s-%s" % (spec.id, spec.node)


def job_gpus(spec: JobSpec, host_gpus: Optional[List[str]] = None) -> List[str]:
    """The GPU indices the job's container gets: asked, else the job's CUDA_VISIBLE_DEVICES, else all."""
    assert spec.runtime is not None
    if spec.runtime.gpus is not None:
        return list(spec.runtime.gpus)
    visible = spec.env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [v.strip() for v in visible.split(",") if v.strip().isdigit()]
    return host_gpu_indices() if host_gpus is None else host_gpus


def resolve_container(spec: JobSpec) -> JobSpec:
    """At launch, on the host: `auto` becomes the runtime found here; GPUs that cannot be passed
    are refused in one line (SpecError), never silently dropped."""
    assert spec.runtime is not None
    try:
        runtime = resolve_runtime(spec.runtime.runtime)
    except RuntimeMissing as exc:
        raise SpecError("spec.runtime.runtime: %s" % exc) from None
    gpus = job_gpus(spec)
    if gpus:
        ok, how = gpu_passing(runtime)
        if not ok:
            raise SpecError("spec.runtime.gpus: the job asks for GPU %s but %s" % (",".join(gpus), how))
    return spec.replace(runtime=Container(**dict(vars(spec.runtime), runtime=runtime)))


def host_facts() -> HostFacts:
    def hard(limit: int) -> Optional[int]:
        try:
            value = resource.getrlimit(limit)[1]
        except (OSError, ValueError):
            return None
        return None if value == resource.RLIM_INFINITY else value

    try:
        memory: Optional[int] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        memory = None
    return HostFacts(
        os.getuid(),
        os.getgid(),
        memory,
        hard(resource.RLIMIT_NOFILE),
        hard(resource.RLIMIT_NPROC),
        gpu_kind(cdi_devices()),
    )


def passed_names(spec: JobSpec, gpus: List[str]) -> List[str]:
    """The job's variables the container gets from the supervisor's environment."""
    return [k for k in list(spec.env) + list(JOB_VARIABLES) if k != "CUDA_VISIBLE_DEVICES" or not gpus]


def run_argv(spec: JobSpec, facts: HostFacts, gpus: List[str], job_dir: Optional[Path] = None) -> List[str]:
    """The whole command line; every piece is one argv element (no shell between it and exec).
    With the node's dir (resolved), the variables come from its env file (envfile.py) and a job
    with `environment` builds it inside (environment.py); without, they are passed by name."""
    c = spec.runtime
    assert c is not None and c.runtime in ("podman", "docker")
    workdir = spec.workdir
    # --log-driver none: the output reaches output.log through the attached client; the runtime's
    # own log would be a second copy of every byte on the host's disk.
    argv = [
        c.runtime,
        "run",
        "--rm",
        "--name",
        container_name(spec),
        "--network",
        "host",
        "--log-driver",
        "none",
    ]
    if c.runtime == "podman":
        argv.append("--replace")  # a leftover of this very node (a crash mid-cleanup) never blocks it
    argv += ["--entrypoint", SHELL, "-v", "%s:%s" % (workdir, workdir), "-w", workdir]
    for mount in c.mounts:
        argv += [
            "-v",
            "%s:%s%s" % (os.path.expanduser(mount.host), mount.container, ":ro" if mount.read_only else ""),
        ]
    if c.runtime == "podman":
        argv += _ulimits(facts)
    argv += _ipc(c, facts)
    if c.user == "host":
        # docker's daemon is root: ask for the agent's uid. podman's root is the user (rootless)
        # or root itself: either way files written back are the user's.
        argv += ["--user", "%d:%d" % (facts.uid, facts.gid) if c.runtime == "docker" else "0:0"]
    by_name, env_arg = passed_names(spec, gpus), "-"
    if job_dir is not None:
        in_file, by_name = split_names(by_name)
        argv += ["-v", "%s:%s:ro" % (env_file(job_dir), MOUNTED_AT)]
        env_arg = MOUNTED_AT
    for key in by_name:
        argv += ["--env", key]
    argv += _gpu_flags(c.runtime, gpus, facts.cdi_kind)
    command = list(spec.argv)
    if spec.environment is not None and job_dir is not None:
        from .environment import environment_mounts, inner_command

        argv += environment_mounts(job_dir)
        command = inner_command(job_dir, spec.environment.python, SHELL) + command
    argv += [c.digest or c.image, "-c", INIT_SCRIPT, "gpudeck-init", env_arg] + command
    return argv


def _ulimits(facts: HostFacts) -> List[str]:
    """podman's default limits may exceed what this host lets root set (no CAP_SYS_RESOURCE: runc
    fails "error setting rlimit"), and podman lowers its own nproc to 32768 before starting
    conmon: ask for what the host allows, within those."""
    flags: List[str] = []
    for name, value, cap in (("nofile", facts.nofile, PODMAN_NOFILE), ("nproc", facts.nproc, PODMAN_NPROC)):
        value = min(value or cap, cap)
        flags += ["--ulimit", "%s=%d:%d" % (name, value, value)]
    return flags


def _ipc(c: Container, facts: HostFacts) -> List[str]:
    if c.ipc == "host":
        return ["--ipc", "host"]
    if c.shm_size:
        return ["--shm-size", c.shm_size]
    # The runtimes' 64 MB /dev/shm kills DataLoader workers: half the host's memory (a cap, not a use).
    half = (facts.memory_bytes or (2 << 30)) // 2 >> 20
    return ["--shm-size", "%dm" % max(half, 64)]


def _gpu_flags(runtime: str, gpus: List[str], cdi_kind: Optional[str]) -> List[str]:
    if not gpus:
        return []
    # Inside, the passed GPUs are numbered from 0: the job's own variable would point past them.
    visible = ["--env", "CUDA_VISIBLE_DEVICES=%s" % ",".join(str(i) for i in range(len(gpus)))]
    if runtime == "docker":
        return ["--gpus", '"device=%s"' % ",".join(gpus)] + visible
    if not cdi_kind:
        raise SpecError("spec.runtime.gpus: no CDI spec names a GPU on this host")
    flags: List[str] = []
    for index in gpus:
        flags += ["--device", "%s=%s" % (cdi_kind, index)]
    return flags + visible


def runtime_of(spec: JobSpec) -> Tuple[str, str]:
    """(runtime, container name) of a container job, for cleanup."""
    assert spec.runtime is not None
    return spec.runtime.runtime, container_name(spec)
