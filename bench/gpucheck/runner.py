"""Runs one part under its time limit: in a thread the main one waits for, its children killed after,
so a hung CUDA call or a stuck agent costs that part its limit and nothing more."""

from __future__ import annotations

import dataclasses
import threading
import time

from .context import Context
from .part_torch import cuda_missing
from .parts import Part
from .result import FAIL, PartResult, skip

MIN_SECONDS = 8.0  # a part given less would only time out
GRACE = 5.0  # after the limit: time for the part to notice, then its children are killed


def run_part(part: Part, ctx: Context, budget_end: float) -> PartResult:
    started = time.monotonic()
    limit = min(part.seconds(ctx.quick), budget_end - started)
    result = _run(part, ctx, limit) if limit >= MIN_SECONDS else skip("no time left in the check's budget")
    return dataclasses.replace(result, part=part.name, seconds=round(time.monotonic() - started, 1))


def _run(part: Part, ctx: Context, limit: float) -> PartResult:
    if part.needs_cuda and (why := cuda_missing(ctx)):
        return skip(why)
    ctx.deadline = time.monotonic() + limit
    box: list[PartResult] = []

    def target() -> None:
        try:
            box.append(part.run(ctx))
        except Exception as e:  # a bug or a surprise of this machine: the part fails, the check goes on
            box.append(PartResult("", FAIL, "", f"{type(e).__name__}: {e}"))

    worker = threading.Thread(target=target, name=f"part-{part.name}", daemon=True)
    worker.start()
    worker.join(limit + GRACE)
    ctx.kill_children()
    worker.join(GRACE)  # killed children end its waits
    if box:
        return box[0]
    return PartResult("", FAIL, "", f"timed out after {limit:.0f} s")
