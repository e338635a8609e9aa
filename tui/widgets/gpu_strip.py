"""Under the job view's GPU chart (which draws the mean and the spread): each GPU's latest reading,
one row per host as nvitop and all-smi list them, so the one GPU that lags is found by eye:

    h100-a  0  96▇  1  93▇  2 100█ …   (utilization %, coloured by level; a hot GPU in $gpu-hot)
"""

from __future__ import annotations

from textual.content import Content

from ..fleet import JobModel
from .gauges import BLOCKS, HOT_C, level_style
from .steady_static import SteadyStatic

CELL = 8  # " 0  96▇ " : one GPU's cells


def strip_lines(job: JobModel, width: int) -> list[Content]:
    """One line per host (wrapped per host when its GPUs outgrow the width); [] without GPUs."""
    by_host: dict[str, list[tuple[int, float | None, float | None]]] = {}
    for key, g in job.gpu_latest.items():
        by_host.setdefault(job.gpu_host.get(key, "?"), []).append((g.index, g.util, g.temp_c))
    label = max((len(h) for h in by_host), default=0)
    per_line = max(1, (width - label - 1) // CELL)
    lines: list[Content] = []
    for host in sorted(by_host):
        gpus = sorted(by_host[host])
        for start in range(0, len(gpus), per_line):
            name = host if start == 0 else ""
            parts: list[tuple[str, str] | str] = [(f"{name:<{label}} ", "$text-muted")]
            for index, util, temp in gpus[start : start + per_line]:
                style = "bold $gpu-hot" if temp is not None and temp >= HOT_C else level_style(util)
                block = "·" if util is None else BLOCKS[max(1, min(8, round(util / 100 * 8)))]
                number = " —" if util is None else f"{util:3.0f}"
                parts += [f"{index:>2} ", (number, style), (block, style), " "]
            lines.append(Content.assemble(*parts))
    return lines


class GpuStrip(SteadyStatic):
    DEFAULT_CSS = "GpuStrip { height: auto; padding: 0 1; }"

    def show(self, job: JobModel) -> None:
        lines = strip_lines(job, self.size.width or 80)
        self.display = bool(lines)
        if lines:
            self.show_content(Content("\n").join(lines))
