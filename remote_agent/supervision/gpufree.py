"""A supervisor's part in proving a job's GPUs free (gpus/leftover.py): it notes which GPUs the
job used and which leftover processes held GPU memory once the command had ended, and at the end
adds the check's fields to the end record. A failure of the check never stops the end being
written: it then claims nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Set

from ..gpus.record import read_assignment
from ..spec_defaults import DEFAULT_GRACE
from .proctree import is_live

LEFTOVER_GRACE = 10.0  # at most this long for the stop signal to work on what the end left


class GpuFree:
    def __init__(self, key: str, spec: Mapping[str, Any], node_dir: Path) -> None:
        self.key = key
        self.spec = spec
        self.node_dir = node_dir
        self.uuids: Set[str] = set()
        self.leftovers: List[Dict[str, Any]] = []
        self._looked = False

    def saw_gpus(self, gpus: Iterable[Mapping[str, Any]]) -> None:
        """The GPUs a sample found the job on: after its end, a process on them is reported."""
        self.uuids.update(str(g["uuid"]) for g in gpus if g.get("uuid"))

    def saw_leftovers(self, tree: Set[int]) -> None:
        """Once, when the command has ended and processes of its tree remain: which hold a GPU."""
        if self._looked or not tree:
            return
        self._looked = True
        from ..gpus import leftover  # here: an idle job's supervisor holds no NVML code (issue 33)
        from ..probes.gpu import default as nvml_session

        try:
            self.leftovers = leftover.of_tree(nvml_session(), tree)
        except Exception:  # a probe must never stop a job from ending
            self.leftovers = []

    def job_gpus(self) -> Set[str]:
        gpus = set(self.uuids)
        assigned = read_assignment(self.node_dir)
        if assigned is not None:
            gpus.update(str(u) for u in assigned["uuids"])
        env = self.spec.get("env")
        visible = env.get("CUDA_VISIBLE_DEVICES") if isinstance(env, dict) else None
        if isinstance(visible, str):
            gpus.update(part.strip() for part in visible.split(",") if part.strip())
        return gpus

    def end_fields(self, journal: Callable[..., Any]) -> Dict[str, Any]:
        """`gpus_checked`, `gpus_freed`, `gpus_held` for the end record; {} when NVML is not here."""
        try:
            grace = min(float(self.spec.get("grace", DEFAULT_GRACE)), LEFTOVER_GRACE)
        except (TypeError, ValueError):
            grace = LEFTOVER_GRACE
        gone = [h for h in self.leftovers if not is_live(h["pid"])]
        pids = {h["pid"] for h in self.leftovers} - {h["pid"] for h in gone}
        from ..gpus import leftover
        from ..probes.gpu import default as nvml_session

        try:
            return leftover.check(
                nvml_session(), self.key, self.job_gpus(), grace, freed=gone, journal=journal, tree=pids
            )
        except Exception:
            return {}
