"""A gpudeck container job (spec.runtime, issue 28) with the GPU, launched through gpudeck's agent,
where docker or podman and the NVIDIA container toolkit exist: nvidia-smi lists the GPU inside,
CUDA_VISIBLE_DEVICES is 0 there, and nothing of the job is left in the runtime. Offline: only an
image already on this machine is used (the run pulls nothing that is present)."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess

from tui.remote.client import AgentError

from .context import ROOT, Context
from .local_agent import LocalAgent
from .result import PartResult, fail, ok, skip

TOOLKIT = ("nvidia-container-runtime-hook", "nvidia-container-toolkit", "nvidia-ctk", "nvidia-container-cli")
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
LIKELY = re.compile(r"cuda|pytorch|torch|nvidia|ngc", re.I)
NO_GLIBC = re.compile(r"busybox|alpine|scratch|distroless", re.I)  # nvidia-smi would not run there


def _run(argv: list[str], timeout: float = 10) -> tuple[int, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, f"{type(e).__name__}: {e}"
    return p.returncode, (p.stdout if p.returncode == 0 else p.stderr).strip()


def cdi_gpu_spec() -> str | None:
    for path in sorted(p for d in CDI_DIRS for p in glob.glob(f"{d}/*.y*ml") + glob.glob(f"{d}/*.json")):
        try:
            with open(path, errors="replace") as f:
                if "nvidia.com/gpu" in f.read():
                    return path
        except OSError:
            continue
    return None


def engine_and_flags() -> tuple[str, list[str], str] | str:
    """(engine, GPU flags, how found) or why no container run with the GPU is possible here."""
    why = []
    docker = shutil.which("docker")
    if docker:
        rc, out = _run([docker, "info", "--format", "{{json .Runtimes}}"])
        if rc != 0:
            why.append(f"docker: daemon not reachable ({out[:120]})")
        else:
            hooks = [t for t in TOOLKIT if shutil.which(t)]
            runtimes = json.loads(out) if out.startswith("{") else {}
            if hooks or "nvidia" in runtimes:
                return docker, ["--gpus", "all"], f"docker, toolkit: {', '.join(hooks) or 'nvidia runtime'}"
            why.append(
                "docker: no NVIDIA container toolkit (no nvidia-container-runtime-hook, no nvidia runtime)"
            )
    podman = shutil.which("podman")
    if podman:
        spec = cdi_gpu_spec()
        if spec:
            return podman, ["--device", "nvidia.com/gpu=all"], f"podman, CDI spec {spec}"
        why.append(
            "podman: no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi (nvidia-ctk cdi generate)"
        )
    return "; ".join(why) or "neither docker nor podman is installed"


def local_image(engine: str, wanted: str | None) -> str | None:
    if wanted:
        return wanted
    rc, out = _run([engine, "images", "--format", "{{.Repository}}:{{.Tag}}"])
    names = [n for n in out.splitlines() if rc == 0 and n and "<none>" not in n and not NO_GLIBC.search(n)]
    return next((n for n in names if LIKELY.search(n)), names[0] if names else None)


def container_job(ctx: Context) -> PartResult:
    found = engine_and_flags()
    if isinstance(found, str):
        return skip(found)
    engine, gpu_flags, how = found
    image = local_image(engine, ctx.options.get("container_image"))
    if image is None:
        return skip(f"{how}; no local image with a C library (offline: nothing is pulled; --container-image)")
    # A gpudeck container job (issue 28: spec.runtime), GPU 0 asked for: the agent passes it the
    # host's way (CDI for podman, --gpus for docker) and numbers it 0 inside.
    argv = ["sh", "-c", 'nvidia-smi -L; echo "CVD=$CUDA_VISIBLE_DEVICES"']
    runtime = {"image": image, "runtime": os.path.basename(engine), "gpus": ["0"]}
    with LocalAgent(ctx.tmp / "gpudeck-home-container") as agent:
        try:
            job_id = agent.launch("gpucheck-container", argv, str(ROOT), runtime=runtime)
        except AgentError as exc:  # the agent refused: it judged GPUs cannot be passed here
            return fail(f"{how}; the agent refused the container job: {exc}", details={"runtime": runtime})
        state = agent.wait_ended(job_id, max(1.0, ctx.left() - 5))
        output = agent.output(job_id)
        left = _run([engine, "ps", "-a", "--filter", f"name=gpudeck-{job_id}", "--format", "{{.Names}}"])[1]
    listed = re.findall(r"GPU \d+: [^\n]*", output)
    details = {"runtime": runtime, "gpu_flags_probe": gpu_flags, "state": state, "output": output[-1000:]}
    if state != "exited" or not listed or "CVD=0" not in output:
        tail = " ".join(output.split())[-300:]
        return fail(f"{how}; {image}: job {state}: {tail or 'no output'}", details=details)
    if left.strip():
        return fail(f"{how}; the job's container was left in the runtime: {left}", details=details)
    return ok(listed[0][:60], f"{how}; image {image}; job {state}; nothing left", details=details)
