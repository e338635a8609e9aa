"""The job view's charts (textual-plotext): loss with its validation series, and GPU (or, on a
host without GPUs, CPU) utilization over time. Series are downsampled to the chart's width, so a
week-long job draws as fast as a minute-long one; a chart redraws only when its data changed."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import cast

from rich.text import Text
from textual.app import RenderResult
from textual.reactive import reactive
from textual_plotext import PlotextPlot

from ..fleet import Fleet, JobModel, Series
from ..fleet.chain import joined
from .loss_axes import EMA_WEIGHT, ema, seconds_to_steps, steps_to_seconds

_VALIDATION = re.compile(r"^(val|valid|validation|eval|test)[_/.-]?", re.I)


def loss_series(job: JobModel) -> tuple[str | None, list[str]]:
    """The training loss series and the validation ones to draw beside it."""
    names = list(job.series)
    main = (
        "loss"
        if "loss" in job.series
        else next((n for n in names if "loss" in n.lower() and not _VALIDATION.match(n)), None)
    )
    if main is None:
        main = next((n for n in names if n not in ("lr", "epoch") and not _VALIDATION.match(n)), None)
    val = [n for n in names if _VALIDATION.match(n) and "loss" in n.lower()][:3]
    return main, val


def resize_marks(job: JobModel) -> list[tuple[float, str]]:
    """(step, "2→3") for each `resized` record the job's journal holds: markers on the loss chart."""
    marks = []
    for e in job.events:
        step, a, b = (e.data.get(k) for k in ("step", "from", "to"))
        if e.name == "resized" and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (step, a, b)
        ):
            marks.append((float(cast(float, step)), f"{a:g}→{b:g}"))  # a number: checked just above
    return marks


class _Chart(PlotextPlot):
    DEFAULT_CSS = "_Chart { height: 1fr; min-height: 6; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._drawn: object = None

    def render(self) -> RenderResult:
        """A chart plotext cannot build (its legend indexes past a line it clipped away) is one
        line, never an exception that ends the TUI."""
        try:
            return super().render()
        except (IndexError, ValueError, ZeroDivisionError) as exc:
            return Text(f"chart not drawn: plotext: {type(exc).__name__}", style="dim")

    def _points(self, series: Series) -> list[tuple[float, float]]:
        return series.downsample(max(16, 2 * (self.size.width or 80)))  # braille: 2 dots a cell

    def _begin(self, key: object) -> bool:
        """False when what would be drawn is what is on screen already."""
        key = (key, self.size.width, self.size.height)
        if key == self._drawn:
            return False
        self._drawn = key
        self.plt.clear_data()
        self.plt.clear_figure()
        return True


class LossChart(_Chart):
    log_scale: reactive[bool] = reactive(False, init=False)  # `L`: a log y axis; values <= 0 left out
    smooth: reactive[bool] = reactive(False, init=False)  # `e`: EMA smoothing of every line
    x_time: reactive[bool] = reactive(False, init=False)  # `x`: x in seconds since the start, not steps

    def _x(
        self, job: JobModel, name: str, pts: list[tuple[float, float]]
    ) -> tuple[list[tuple[float, float]], str]:
        """The points on the x axis asked for, and that axis's name (the series' own when unmappable)."""
        axis, t0 = job.axis(name), job.started_at
        if axis == "step" and self.x_time and t0 is not None:
            mapped = steps_to_seconds(pts, job.step_time.points(), t0)
            if mapped is not None:
                return mapped, "seconds"
        if axis == "time" and not self.x_time:
            mapped = seconds_to_steps(pts, job.step_time.points())
            if mapped is not None:
                return mapped, "step"
        if axis == "time" and t0 is not None:
            return [(x - t0, y) for x, y in pts], "seconds"
        return pts, "step" if axis == "step" else "seconds"

    def chained(self, job: JobModel, chain: Sequence[JobModel], name: str) -> list[tuple[float, float]]:
        """The points drawn for `name`: a resized job's ancestors' (`chain`, oldest first) before its
        own, so the curve continues across restart-mode resizes. On the step axis only: seconds are
        counted from each job's own start."""
        own = self._points(job.series[name])
        if not chain or job.axis(name) != "step" or self.x_time:
            return own
        return joined([self._points(a.series[name]) for a in chain if name in a.series] + [own])

    def show(self, job: JobModel, chain: Sequence[JobModel] = ()) -> None:
        main, val = loss_series(job)
        shown = [n for n in [main, *val] if n]
        marks = (
            sorted({m for j in [*chain, job] for m in resize_marks(j)})
            if shown and job.axis(shown[0]) == "step"
            else []
        )
        state = (self.log_scale, self.smooth, self.x_time, job.step_time.version)
        versions = [(a.id, n, a.series[n].version) for a in chain for n in shown if n in a.series]
        if not self._begin((state, tuple(marks), *((n, job.series[n].version) for n in shown), *versions)):
            return
        plt = self.plt
        if not shown:
            plt.title("loss — waiting for the first metric line")
        left_out, decades, x_name = 0, [], "step"
        for i, name in enumerate(shown):
            pts, axis_name = self._x(job, name, self.chained(job, chain, name))
            x_name = axis_name if i == 0 else x_name
            if self.smooth:
                pts = ema(pts)
            if self.log_scale:
                # log10 drawn on a linear axis with decade labels: plotext's own yscale("log") takes
                # the log of its data in place on every build, so a second draw fails on its output.
                kept = [(x, math.log10(y)) for x, y in pts if y > 0]
                left_out, pts = left_out + len(pts) - len(kept), kept
                decades += [y for _, y in pts]
            if pts:
                plt.plot([p[0] for p in pts], [p[1] for p in pts], label=name, marker="braille")
        if decades:
            ticks: list[float] = list(range(math.floor(min(decades)), math.ceil(max(decades)) + 1))
            plt.yticks(ticks, [f"{10.0**t:g}" for t in ticks])
        if shown:
            plt.xlabel(x_name)
            if x_name == "step":
                for step, _ in marks:
                    plt.vline(step)  # a resize: the world size changed here
            title = " · ".join(shown) + (" (log)" if self.log_scale else "")
            title += f" · EMA {EMA_WEIGHT:g}" if self.smooth else ""
            title += " · per second" if x_name == "seconds" and job.axis(shown[0]) == "step" else ""
            if marks:
                title += " · resized " + ", ".join(f"{label} @ {step:g}" for step, label in marks[-3:])
            plt.title(title + (f" — {left_out} points <= 0 not drawn" if left_out else ""))
        self.refresh()


class UsageChart(_Chart):
    def show(self, job: JobModel, fleet: Fleet) -> None:
        if job.gpu_util:
            self._gpus(job)
        else:
            self._cpu(job, fleet)

    def _gpus(self, job: JobModel) -> None:
        """One line for the GPUs' mean utilization, two for its min and max (the spread), one for
        mean memory: four legend entries whatever the GPU count (a line per GPU hid the plot at 8)."""
        key = tuple((k, s.version) for k, s in job.gpu_util.items())
        key += tuple((k, s.version) for k, s in job.gpu_mem.items())
        if not self._begin(key):
            return
        t0 = job.started_at or 0.0
        # from the job's start (a sample of the node's first seconds can predate it): plotext
        # cannot draw a legend for a line with no point inside the axis
        util = [[(x - t0, y) for x, y in self._points(s) if x >= t0] for s in job.gpu_util.values()]
        mem = []
        for gpu, series in job.gpu_mem.items():
            latest = job.gpu_latest.get(gpu)
            if latest is not None and latest.mem_total_mib:
                total = latest.mem_total_mib
                mem.append(
                    [(x - t0, min(100.0, 100 * y / total)) for x, y in self._points(series) if x >= t0]
                )  # inside ylim(0, 100) too, for the same reason
        cells = max(16, 2 * (self.size.width or 80))
        spread = across(util, cells)
        n = len(job.gpu_util)
        if spread:
            xs = [p[0] for p in spread]
            if n > 1:
                self.plt.plot(xs, [p[3] for p in spread], label="max", marker="braille", color="gray")
                self.plt.plot(xs, [p[2] for p in spread], label="min", marker="braille", color="gray")
            self.plt.plot(
                xs, [p[1] for p in spread], label="util" if n == 1 else "util mean", marker="braille"
            )
        mem_mean = across(mem, cells)
        if mem_mean:
            label = "mem" if len(mem) == 1 else "mem mean"
            self.plt.plot([p[0] for p in mem_mean], [p[1] for p in mem_mean], label=label, marker="braille")
        self.plt.ylim(0, 100)
        # the span holds every line's points: a memory sample newer than the newest utilization one
        # left the memory line with no point inside the axis, and plotext's legend raised IndexError
        self._job_span(job, max((x for line in (*util, *mem) for x, _ in line), default=None))
        self.plt.title(f"{n} GPU{'s' if n != 1 else ''} utilization % · memory %")
        self.plt.xlabel("seconds")
        self.refresh()

    def _job_span(self, job: JobModel, newest: float | None) -> None:
        """The x axis from the job's start (0 s) to its end or its newest point: the loss chart's span."""
        ended = None if job.active or job.ended_at is None or job.started_at is None else job.ended_at
        end = ended - (job.started_at or 0.0) if ended is not None else None
        if newest is not None:  # every point stays inside (a late sample of an ended job too)
            end = max(end or 0.0, newest)
        if end is not None and end > 0:
            self.plt.xlim(0, end)

    def _cpu(self, job: JobModel, fleet: Fleet) -> None:
        host = fleet.hosts.get(job.hosts[0]) if job.hosts else None
        if host is None or not self._begin(("cpu", host.name, host.cpu_series.version)):
            return
        # CPU samples carry the client's clock; the job's start is on the host's.
        t0 = (job.started_at or 0.0) - host.clock_offset
        end = None if job.active or job.ended_at is None else job.ended_at - host.clock_offset + 5
        pts = [
            (x - t0, y)
            for x, y in self._points(host.cpu_series)
            if x >= t0 and (end is None or x <= end)  # the job's span, as the loss chart's
        ]
        if pts:
            self.plt.plot([p[0] for p in pts], [p[1] for p in pts], label="host CPU %", marker="braille")
        self.plt.ylim(0, 100)
        self._job_span(job, pts[-1][0] if pts else None)
        # Short titles: plotext drops a title wider than the chart.
        self.plt.title(f"{host.name} CPU % (no GPU samples)" if pts else "no CPU samples from the job's run")
        self.plt.xlabel("seconds")
        self.refresh()


def across(
    lines: Sequence[Sequence[tuple[float, float]]], cells: int
) -> list[tuple[float, float, float, float]]:
    """(x, mean, min, max) of several lines, in `cells` buckets of x: GPUs sampled at slightly
    different times fall in one bucket, each GPU counted once there (its latest value), so a
    bucket's mean does not depend on how many polls one GPU had in it."""
    xs = [x for line in lines for x, _ in line]
    if not xs:
        return []
    lo, hi = min(xs), max(xs)
    width = (hi - lo) / cells or 1.0
    buckets: dict[int, list[float]] = {}
    for line in lines:
        latest: dict[int, float] = {}
        for x, y in line:
            latest[min(cells - 1, int((x - lo) / width))] = y
        for i, y in latest.items():
            buckets.setdefault(i, []).append(y)
    return [
        (lo + (i + 0.5) * width, sum(ys) / len(ys), min(ys), max(ys)) for i, ys in sorted(buckets.items())
    ]
