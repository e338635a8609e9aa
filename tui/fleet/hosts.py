"""Hosts: connection status, hello info, the latest GPU sample and per-GPU utilization history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .gpu_trail import TRAIL_POINTS, GpuTrail
from .series import Series
from .values import finite, integer, text

UtilLevel = Literal["idle", "moderate", "busy"]
HostStatus = Literal["connecting", "connected", "reconnecting", "unreachable"]
HOST_STATUSES: tuple[str, ...] = ("connecting", "connected", "reconnecting", "unreachable")

IDLE_BELOW = 10.0  # nvitop's thresholds: < 10 % idle, <= 75 % moderate, above busy
BUSY_ABOVE = 75.0


RING_POINTS = 3600  # serve's ring holds an hour at 1 Hz


def util_level(pct: float | None) -> UtilLevel:
    """nvitop-like level of a utilization percentage; unknown (None/NaN) counts as idle."""
    if pct is None or pct != pct or pct < IDLE_BELOW:
        return "idle"
    return "moderate" if pct <= BUSY_ABOVE else "busy"


def _gpu_series() -> Series:
    # A sparkline is a few dozen cells wide: a small history is plenty.
    return Series(recent=256, buckets=128)


@dataclass
class GpuProcess:
    pid: int
    user: str | None = None
    mem_mib: float | None = None


@dataclass
class GpuSample:
    """One GPU's latest reading; None where the hardware answered "not available"."""

    index: int
    uuid: str | None = None
    name: str | None = None
    util: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    processes: list[GpuProcess] = field(default_factory=list)
    health: str | None = None  # new errors (XID, uncorrected ECC) the agent saw on it, one line, or None

    @property
    def level(self) -> UtilLevel:
        return util_level(self.util)

    @property
    def mem_pct(self) -> float | None:
        if self.mem_used_mib is None or not self.mem_total_mib:
            return None
        return 100.0 * self.mem_used_mib / self.mem_total_mib


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in d:
            return d[k]
    return None


def parse_gpu(d: Any, position: int) -> GpuSample | None:
    """A GpuSample from an agent dict (journal or `gpus` spelling); None if it is not a dict."""
    if not isinstance(d, dict):
        return None
    index = integer(d.get("index"))
    procs: list[GpuProcess] = []
    raw_procs = d.get("processes")
    for p in raw_procs if isinstance(raw_procs, list) else ():
        pid = integer(p.get("pid")) if isinstance(p, dict) else None
        if pid is not None:
            procs.append(
                GpuProcess(
                    pid, text(p.get("user"), 64), finite(_first(p, "mem_mib", "used_mib", "mem_used_mib"))
                )
            )
    return GpuSample(
        index=position if index is None else index,
        uuid=text(d.get("uuid"), 128),
        name=text(d.get("name"), 128),
        util=finite(_first(d, "util", "util_pct", "utilization")),
        mem_used_mib=finite(_first(d, "mem_used_mib", "memory_used_mib")),
        mem_total_mib=finite(_first(d, "mem_total_mib", "memory_total_mib")),
        temp_c=finite(_first(d, "temp_c", "temperature")),
        power_w=finite(_first(d, "power_w", "power")),
        power_limit_w=finite(d.get("power_limit_w")),
        processes=procs,
        health=_health_flag(d.get("health")),
    )


def _health_flag(health: Any) -> str | None:
    """The agent's one-line flag of a GPU with errors (remote_agent/probes/gpuhealth.py)."""
    got = health.get("flag") if isinstance(health, dict) else None
    return text(got, 200) if isinstance(got, str) and got else None


def _percent(v: Any) -> float | None:
    """CPU load as a percentage, from a bare number or a dict such as {"percent": 12.5}."""
    if isinstance(v, dict):
        v = _first(v, "percent", "util", "load_pct")
    return finite(v)


@dataclass
class HostModel:
    name: str
    status: HostStatus = "connecting"
    reason: str | None = None  # why it is reconnecting / unreachable
    since: float | None = None  # when the current status began (client clock)
    last_update: float | None = None  # client clock of the last data received: staleness
    clock_offset: float = 0.0  # host clock minus client clock, from hello's `time`
    hello: dict[str, Any] = field(default_factory=dict)
    gpus: list[GpuSample] = field(default_factory=list)
    gpu_available: bool | None = None  # None until the first sample or hello says
    no_gpu_reason: str | None = None
    cpu: Any = None  # as the agent sent it (number or dict)
    ram: Any = None
    sample_t: float | None = None
    util_series: dict[int, Series] = field(default_factory=dict)  # GPU index -> utilization
    cpu_series: Series = field(default_factory=_gpu_series)
    trails: dict[int, GpuTrail] = field(default_factory=dict)  # GPU index -> memory/power/temperature
    slurm: dict[str, Any] | None = None  # a Slurm host's `slurm` report: the cluster panel (fleet/cluster.py)
    version: int = 0  # bumped by every change to what the host shows: its panel redraws only then

    @property
    def up(self) -> bool:
        return self.status == "connected"

    def staleness(self, now: float) -> float | None:
        """Seconds since this host last told us anything; None if it never did."""
        return None if self.last_update is None else max(0.0, now - self.last_update)

    def set_status(self, status: HostStatus, reason: str | None, t: float) -> bool:
        changed = status != self.status or reason != self.reason
        if status != self.status:
            self.since = t  # "reconnecting for 2 min" counts from the first failure, not the last retry
        self.status, self.reason = status, reason
        self.version += changed
        return changed

    def apply_hello(self, hello: dict[str, Any]) -> None:
        self.version += 1
        self.hello = dict(hello)
        gpu = hello.get("gpu")
        if isinstance(gpu, dict) and isinstance(gpu.get("available"), bool):
            self.gpu_available = gpu["available"]
            self.no_gpu_reason = None if self.gpu_available else text(gpu.get("reason"), 512)
        elif isinstance(gpu, list):  # a bare inventory list
            self.gpu_available = bool(gpu)

    def apply_history(self, points: Any, mem_totals: dict[int, float] | None = None) -> None:
        """serve's ring of 1 Hz readings (host clock), drawn before the live samples that follow;
        its last TRAIL_POINTS also fill the wide layout's trails (memory % from `mem_totals`)."""
        self.version += 1
        kept = points[-RING_POINTS:] if isinstance(points, list) else []
        for n, point in enumerate(kept):
            t, gpus = (point.get("t"), point.get("gpus")) if isinstance(point, dict) else (None, None)
            if not isinstance(t, (int, float)) or not isinstance(gpus, list):
                continue
            for i, reading in enumerate(gpus[:64]):
                util = reading.get("util") if isinstance(reading, dict) else None
                index = reading.get("index", i) if isinstance(reading, dict) else i
                if isinstance(util, (int, float)) and isinstance(index, int):
                    self.util_series.setdefault(index, _gpu_series()).add(t - self.clock_offset, util)
                if n >= len(kept) - TRAIL_POINTS and isinstance(reading, dict) and isinstance(index, int):
                    self._trail_reading(t - self.clock_offset, index, reading, (mem_totals or {}).get(index))

    def _trail_reading(self, t: float, index: int, reading: dict[str, Any], mem_total: float | None) -> None:
        used = finite(reading.get("mem_used_mib"))
        mem_pct = 100.0 * used / mem_total if used is not None and mem_total else None
        trail = self.trails.get(index) or self.trails.setdefault(index, GpuTrail())
        trail.add(t, mem_pct, finite(reading.get("power_w")), finite(reading.get("temp_c")))

    def apply_sample(self, sample: dict[str, Any], t: float) -> None:
        self.version += 1
        gpus = sample.get("gpus")
        parsed = [
            g for i, d in enumerate(gpus[:64] if isinstance(gpus, list) else ()) if (g := parse_gpu(d, i))
        ]
        available = sample.get("available")
        self.gpu_available = bool(parsed) if not isinstance(available, bool) else available and bool(parsed)
        self.no_gpu_reason = None if self.gpu_available else text(sample.get("reason"), 512)
        self.gpus = parsed
        self.cpu, self.ram, self.sample_t = sample.get("cpu"), sample.get("ram"), t
        for g in parsed:
            if g.util is not None:
                self.util_series.setdefault(g.index, _gpu_series()).add(t, g.util)
            trail = self.trails.get(g.index) or self.trails.setdefault(g.index, GpuTrail())  # one made once
            trail.add(t, g.mem_pct, g.power_w, g.temp_c)
        cpu = _percent(self.cpu)
        if cpu is not None:
            self.cpu_series.add(t, cpu)
