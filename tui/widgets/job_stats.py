"""The job view's numbers: state, runtime, step/total, throughput, ETA, latest metrics, cost."""

from __future__ import annotations

import time

from textual.content import Content

from ..fleet import Fleet, JobModel
from ..fleet.holds import held_text
from ..format import duration, metric_line, money, number
from .jobs_table import BUDGET_STYLE, STATE_STYLE
from .steady_static import SteadyStatic


def cost_line(job: JobModel, fleet: Fleet) -> Content:
    """cost so far, burn, projected to finish, idle waste and the job's budget; "—" when unknown."""
    b = fleet.costs
    c = b.jobs.get(job.id)
    cur = b.currency
    if not (job.caught_up or job.active):  # an ended job's journal still being read: a part would mislead
        return Content.assemble("cost so far ", ("… reading its journal", "$text-muted"))

    def m(value: float | None, per: str = "") -> tuple[str, str]:
        return (money(value, cur, per), "$cost")

    parts: list[str | tuple[str, str]] = [
        "cost so far ",
        m(c.accrued if c else None),
        "   burn ",
        m(c.burn if c else None, "/h"),
        "   projected ",
        m(c.projected if c else None),
        "   idle ",
        m(c.idle if c else None),
    ]
    if c is not None and c.budget is not None:
        parts += ["   budget ", (money(c.budget, cur), BUDGET_STYLE.get(c.budget_status or "", "$cost"))]
    return Content.assemble(*parts)


def resized_line(job: JobModel) -> Content:
    """ "resized from N nodes (JOB-ID)" for a job that a resize started; empty otherwise."""
    r = job.resized_from
    if r is None:
        return Content("")
    return Content.assemble(
        "  resized from ",
        (f"{r.nodes} node{'s' if r.nodes != 1 else ''}", "bold"),
        " (",
        (r.job, "$text-muted"),
        ")",
    )


def watch_line(job: JobModel) -> Content:
    """ "watching PATH (read-only)" for a run gpudeck did not start (gpudeck watch); empty otherwise."""
    w = job.watch
    if w is None:
        return Content("")
    how = "read-only" if w.read_only else f"pid {w.pid}"
    return Content.assemble(
        "  watching ", (w.path, "italic"), (f" ({how})", "$text-muted")
    )  # user text: never markup


def render_stats(job: JobModel, fleet: Fleet, now: float) -> Content:
    host = fleet.hosts.get(job.hosts[0]) if job.hosts else None
    host_now = now + (host.clock_offset if host else 0.0)
    step = (
        "—"
        if job.step is None
        else f"{job.step:.0f}" + (f" / {job.total_steps:.0f}" if job.total_steps else "")
    )
    rate = job.steps_per_sec()
    lines = [
        Content.assemble(
            (job.name or job.id, "bold"),
            "  ",
            (job.state, STATE_STYLE.get(job.state, "")),
            ("  " + job.id, "$text-muted"),
            ("  on " + ", ".join(job.hosts), "$text-muted"),
            resized_line(job),
            watch_line(job),
        ),
        Content(
            f"runtime {duration(job.runtime(host_now))}   step {step}   "
            f"{number(rate) if rate else '—'} steps/s   "
            f"{number(job.samples_per_sec) if job.samples_per_sec is not None else '—'} samples/s   "
            f"ETA {duration(job.eta_seconds) if job.eta_seconds is not None else '—'}"
        ),
        cost_line(job, fleet),
        Content(metric_line({k: v for k, v in job.last.items() if _in_header(k)})[:400]),
    ]
    if job.state == "failed":
        lines.append(Content.styled(f"failed: {job.why}", "$error"))
    elif job.state == "lost":
        lines.append(Content.styled("lost: its supervisor is gone without writing an ending", "$error"))
    if job.ended:
        lines.extend(Content.styled(f"! {line}", "$error") for line in job.gpus_held)
    held = job.held_until(time.time())
    if held is not None:  # --hold-on-fail: `!` opens a shell on its node (job_ports.py)
        lines.append(Content.styled(f"{held_text(held)}: ! opens a shell on its node", "$warning"))
    return Content("\n").join(lines)


class JobStats(SteadyStatic):
    DEFAULT_CSS = "JobStats { height: auto; padding: 0 1; }"

    def show(self, job: JobModel, fleet: Fleet, now: float) -> None:
        self.show_content(render_stats(job, fleet, now))


def _in_header(name: str) -> bool:
    """The latest values the header lists: no axis, no rank, no other rank's copy of a value."""
    return name not in ("step", "total_steps", "rank") and "/rank" not in name
