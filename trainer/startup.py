"""When this run got through each phase of its start (epoch seconds), reported in the `resumed`
event: where a resize's pause goes (the launcher, the torch import, the process group, the
checkpoint), for bench/scale_timeline.py and anyone reading a slow resume."""

from __future__ import annotations

import os
import time

# trainer.torchrun sets it once torch is imported in the launcher; torchrun's workers inherit it
LAUNCHER_IMPORTED = "GPUDECK_LAUNCHER_IMPORTED"


def process_started() -> float | None:
    """This process's start (fork) time from /proc: before the interpreter and its imports ran.
    An exec keeps it (a launcher that execs its worker reports its own start). None off Linux."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])  # field 22, counted after "(comm) "
        # boot time from the boot clock, not /proc/stat's btime (whole seconds: up to 1 s off)
        boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Startup:
    """Marks taken as the run starts; `fields()` is what the `resumed` event carries."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        started = process_started()
        if started is not None:
            self.marks["process_started"] = round(started, 3)
        try:
            self.marks["launcher_imported"] = round(float(os.environ[LAUNCHER_IMPORTED]), 3)
        except (KeyError, ValueError):
            pass

    def mark(self, name: str) -> None:
        self.marks[name] = round(time.time(), 3)

    def fields(self) -> dict[str, float]:
        return dict(self.marks)
