"""The supervisor's side of advice: it hands over the output's lines, the metric entries and each
GPU look; this answers the `advice` events to journal, each kind once per job and node. The
output check is one regular-expression search over a whole chunk (the dense-stream path stays
fast); the per-kind modules build the records."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Set, Tuple

from . import nccl, oom
from .loader import STEPS as LOADER_STEPS
from .loader import LoaderJudge

# Every pattern of oom.OOM and nccl.NCCL holds one of these capitals (CUDA, NCCL, OutOfMemoryError,
# Watchdog, nccl…Error) and one of these words. A one-character test is a memchr (a chunk of JSON
# metric lines has no capital at all); the words and the regular expression only run past them.
_CAPITALS = "COWE"
_WORDS = ("emory", "NCCL", "nccl", "Watchdog")
_ANY = re.compile("(?:%s)|(?:%s)" % (oom.OOM.pattern, nccl.NCCL.pattern))

if TYPE_CHECKING:  # made at the first look at GPUs: an idle job's supervisor holds no NVML code
    from .gpuhealth import HealthJudge


def command_of(spec: Mapping[str, Any]) -> List[str]:
    """The user's command: a multi-node job's own (before torchrun's line around it), else argv."""
    mn = spec.get("multinode")
    command = mn.get("command") if isinstance(mn, dict) else None
    argv = command or spec.get("argv") or []
    return [str(a) for a in argv]


class AdviceWatch:
    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        self.argv = command_of(spec)
        self.said: Set[str] = set()
        self.steps = 0
        self.peak: Dict[str, Dict[str, Any]] = {}  # uuid -> {index, mem_total_mib, peak_mib}
        self.loader = LoaderJudge(self.argv)
        self._health: Optional[HealthJudge] = None

    def _once(self, record: Optional[Dict[str, Any]]) -> List[Tuple[str, Dict[str, Any]]]:
        if record is None or record["kind"] in self.said:
            return []
        if record["kind"] != "gpu_health":  # each GPU's errors are said once by HealthJudge
            self.said.add(record["kind"])
        return [("event", {"event": "advice", "data": record})]

    def lines(
        self, lines: List[str], entries: List[Tuple[str, Dict[str, Any]]]
    ) -> List[Tuple[str, Dict[str, Any]]]:
        """Entries to journal after these lines (and the metric entries they made)."""
        if self.steps < LOADER_STEPS:  # the loader is judged once training is under way
            for kind, body in entries:
                values = body.get("values") if kind == "metric" else None
                if isinstance(values, dict) and isinstance(values.get("step"), (int, float)):
                    self.steps += 1
        if not lines or {"oom", "nccl"} <= self.said:
            return []
        text = "\n".join(lines)
        # Cheapest tests first, so a dense metric stream pays next to nothing (bench/bench_advice.py).
        if not any(c in text for c in _CAPITALS) or not any(w in text for w in _WORDS):
            return []
        if _ANY.search(text) is None:
            return []
        out: List[Tuple[str, Dict[str, Any]]] = []
        for line in lines:
            if "oom" not in self.said and oom.is_oom(line):
                out += self._once(oom.advice(line, self.argv, self.peak))
            elif "nccl" not in self.said and nccl.NCCL.search(line) and not nccl.BENIGN.search(line):
                out += self._once(nccl.advice(line, self.spec))
        return out

    def gpus(
        self,
        gpus: List[Dict[str, Any]],
        cpu: Optional[Tuple[float, float]],
        cores: int,
        health: Optional[Dict[str, Dict[str, Any]]],
    ) -> List[Tuple[str, Dict[str, Any]]]:
        """Entries to journal after a look at the job's GPUs (its CPU and the GPUs' health with it)."""
        for g in gpus:
            uuid, used = g.get("uuid"), g.get("mem_used_mib")
            if not uuid or not isinstance(used, int):
                continue
            seen = self.peak.setdefault(
                uuid, {"index": g.get("index"), "mem_total_mib": g.get("mem_total_mib"), "peak_mib": 0}
            )
            seen["peak_mib"] = max(seen["peak_mib"], used)
        out: List[Tuple[str, Dict[str, Any]]] = []
        if "loader" not in self.said:
            out += self._once(self.loader.sample([g.get("util") for g in gpus], cpu, cores, self.steps))
        if health is not None:
            out += self._once(
                self._health_judge().look(health, [str(g["uuid"]) for g in gpus if g.get("uuid")])
            )
        return out

    def _health_judge(self) -> HealthJudge:
        if self._health is None:
            from .gpuhealth import HealthJudge

            self._health = HealthJudge()
        return self._health
