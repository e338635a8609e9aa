"""The GPUs of a Slurm job gpudeck did not start (`watch --slurm-job`): the login node cannot read a
compute node's NVML, so a step inside the job's allocation does -- `srun --jobid ID --overlap`, one
task per node, each running this agent's `slurm-gpus` (this zipapp, on the shared file system),
which prints one JSON line: its node's name and a reading of each GPU the step sees (Slurm's
cgroup shows a step only the job's devices). The watch's supervisor journals them as `gpu` records,
each GPU tagged with its node, as a supervisor on the node would have."""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any, Dict, List, Optional

from ..supervision.launcher import self_command
from .commands import SlurmError, run
from .hostlist import expand
from .queue import scontrol_job

STEP_TIMEOUT = 30.0
KEEP = ("uuid", "index", "util", "mem_used_mib", "mem_total_mib", "temp_c", "power_w")


def print_node_gpus() -> int:
    """`gpudeck-agent slurm-gpus`: this node's GPUs as one JSON line (none: an empty list)."""
    from ..probes.gpu import Nvml

    sample = Nvml().sample(processes=False)
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    gpus = [dict({k: g.get(k) for k in KEEP}, node=node) for g in sample.get("gpus") or []]
    print(json.dumps({"node": node, "gpus": gpus, "reason": sample.get("reason")}), flush=True)
    return 0


def parse_step_output(out: str) -> List[Dict[str, Any]]:
    """Every node's GPUs from the step's lines, by node; other lines (srun's own) are skipped."""
    gpus: List[Dict[str, Any]] = []
    for line in out.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("gpus"), list):
            gpus.extend(g for g in obj["gpus"][:64] if isinstance(g, dict))
    return sorted(gpus, key=lambda g: (str(g.get("node")), g.get("index") or 0))[:1024]


def sample_allocation(slurm_job: str) -> Optional[List[Dict[str, Any]]]:
    """The running job's GPUs, one step on each of its nodes; None when no step could run there
    (the job is not running, or srun refused)."""
    job = scontrol_job(slurm_job)
    if job is None or job.state != "RUNNING":
        return None
    nodes = len(expand(job.nodes)) or 1
    argv = ["srun", "--jobid", slurm_job, "--overlap", "--quiet", "--nodes=%d" % nodes]
    argv += ["--ntasks=%d" % nodes, "--ntasks-per-node=1"] + self_command() + ["slurm-gpus"]
    try:
        code, out, _ = run(argv, STEP_TIMEOUT)
    except SlurmError:
        return None
    gpus = parse_step_output(out)
    return gpus if code == 0 or gpus else None


class AllocationSampler:
    """Samples in a thread of its own (a step takes ~0.2 s, a busy cluster longer): the supervisor's
    loop takes the latest reading when its GPU sample is due, never waiting for srun."""

    def __init__(self, slurm_job: str) -> None:
        self.slurm_job = slurm_job
        self._latest: Optional[List[Dict[str, Any]]] = None
        self._busy = threading.Lock()
        self.failures = 0

    def take(self) -> Optional[List[Dict[str, Any]]]:
        """The reading made since the last take (None: none yet), and the next one started."""
        latest, self._latest = self._latest, None
        if self._busy.acquire(blocking=False):
            threading.Thread(target=self._sample, name="slurm-gpus", daemon=True).start()
        return latest

    def _sample(self) -> None:
        try:
            got = sample_allocation(self.slurm_job)
            if got is None:
                self.failures += 1
            else:
                self._latest = got
        finally:
            self._busy.release()
