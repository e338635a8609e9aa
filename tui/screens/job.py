"""A job: its numbers, its nodes (when more than one), live loss chart, GPU (or CPU) chart and the output tail."""

from __future__ import annotations

import time

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from ..export_rows import job_points
from ..fleet import Fleet, JobModel
from ..fleet.chain import ancestors
from ..messages import FleetUpdated
from ..services import Connections, JobControl
from ..widgets.charts import LossChart, UsageChart
from ..widgets.export_view import EXPORT_BINDING, export
from ..widgets.failures import guarded
from ..widgets.footer import DeckFooter
from ..widgets.gpu_strip import GpuStrip
from ..widgets.job_advice import JobAdvice
from ..widgets.job_nodes import JobNodes
from ..widgets.job_stats import JobStats
from ..widgets.output_log import OutputLog
from .dump_view import DumpScreen
from .job_actions import JOB_BINDINGS, JobActions
from .job_ports import show_forwards
from .sight import in_sight

TAIL_BYTES = 64 << 10


class JobScreen(JobActions):
    CSS_PATH = "job.tcss"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="back"),
        *JOB_BINDINGS,
        Binding("f", "toggle_follow", "Follow", id="toggle_follow"),
        Binding(
            "L",
            "loss_log_scale",
            "Log scale",
            id="loss_log_scale",
            tooltip="the loss chart's y axis: log / linear",
        ),
        Binding(
            "e",
            "loss_smoothing",
            "Smooth",
            id="loss_smoothing",
            tooltip="the loss chart: EMA smoothing on / off",
        ),
        Binding(
            "x",
            "loss_x_axis",
            "Steps/time",
            id="loss_x_axis",
            tooltip="the loss chart's x axis: step / seconds",
        ),
        EXPORT_BINDING,
        Binding(
            "D",
            "job_dump",
            "Stacks",
            id="job_dump",
            tooltip="the stacks of the job's Python processes (a hung job): the saved dump; n takes one",
            show=False,  # the Footer is full; ? lists it
        ),
    ]

    def __init__(self, fleet: Fleet, connections: Connections, job_control: JobControl, job_id: str) -> None:
        super().__init__()
        self.fleet, self.connections, self.job_control, self.job_id = fleet, connections, job_control, job_id

    def current_job(self) -> JobModel | None:
        return self.fleet.jobs.get(self.job_id)

    def action_job_dump(self) -> None:
        """D: the job's latest saved stacks, and a new dump from there (dump_view.py)."""
        if self.current_job() is not None:
            self.app.push_screen(DumpScreen(self.fleet, self.connections, self.job_id))

    def action_export_view(self) -> None:
        """E: every point of the job's series, to CSV and JSON files."""
        job = self.current_job()
        if job is not None:
            export(self, f"points-{job.name or job.id}", *job_points(job.series))

    def compose(self) -> ComposeResult:
        job = self.current_job()
        node = min(job.nodes.values(), key=lambda n: n.node, default=None) if job else None  # rank 0 prints
        yield JobStats(id="stats")
        yield Static(id="proposal")
        yield Static(id="forwards")  # `F`: the job's open forwards (job_ports.py)
        yield JobNodes(id="nodes")
        yield JobAdvice(id="advice")  # the seeds' troubleshooting from evidence, when there is some
        with Horizontal(id="charts"):
            yield LossChart(id="loss")
            yield UsageChart(id="usage")
        yield GpuStrip(id="gpu-strip")  # each GPU's latest, beside the chart's mean and spread
        yield OutputLog(
            self.connections,
            node.host if node else None,
            self.job_id,
            node.node if node else "0",
            TAIL_BYTES,
            id="output",
        )
        yield DeckFooter()

    def chain(self) -> list[JobModel]:
        """The jobs this one was resized from (restart mode), oldest first: drawn before it."""
        job = self.current_job()
        return ancestors(self.fleet.jobs, job) if job else []

    _watched: tuple[str, ...] = ()

    def on_mount(self) -> None:
        # its series (and its ancestors', for one continuous curve), downsampled by the agent, then its tail
        self._watched = (*(a.id for a in self.chain()), self.job_id)
        for job_id in self._watched:
            self.connections.watch_job(job_id)
        self._draw(frozenset({"series", "gpu", "state"}))
        show_forwards(self.app, self.job_id)

    def on_unmount(self) -> None:
        # a view that followed this one to the resized job may have mounted first and watch them too
        others = {
            i for s in self.app.screen_stack if isinstance(s, JobScreen) and s is not self for i in s._watched
        }
        for job_id in self._watched:
            if job_id not in others:
                self.connections.unwatch_job(job_id)  # an ended job's series go back to a summary

    _successor: str | None = None  # the job a resize/restart from this view creates: shown once it appears

    def restarted(self, new_id: str) -> None:
        """A restart-mode resize, a restart or an accepted proposal makes a new job id: the view
        follows its job there (an elastic resize keeps the id, so no such job ever appears)."""
        self._successor = new_id
        self._follow()

    def _follow(self) -> bool:
        """Replace this view with the successor's once the fleet lists it; only while on top, since
        switch_screen replaces the top screen (under the full log, it waits for on_screen_resume)."""
        new_id = self._successor
        if new_id is None or new_id not in self.fleet.jobs or self.app.screen is not self:
            return False
        self._successor = None
        self.app.switch_screen(JobScreen(self.fleet, self.connections, self.job_control, new_id))
        return True

    def on_fleet_updated(self, message: FleetUpdated) -> None:
        if self._follow():
            return
        if in_sight(self):
            self._draw(message.tags)
        else:  # under the full log: drawn when back on top
            self._missed |= message.tags

    _missed: frozenset[str] = frozenset()

    def on_screen_resume(self) -> None:
        if self._follow():
            return
        tags, self._missed = self._missed, frozenset()
        if tags:
            self._draw(tags)

    @guarded("job view")
    def _draw(self, tags: frozenset[str]) -> None:
        job = self.current_job()
        if job is None:
            if self.job_id in self.fleet.removed:
                self._show_removed()
            return
        now = time.time()
        self.query_one(JobStats).show(job, self.fleet, now)
        self.query_one(JobNodes).show(job, self.fleet, now)
        self.query_one(JobAdvice).show(job.advice)
        self._show_proposal(job)
        if tags & {"series", "last", "state"}:
            self.query_one(LossChart).show(job, self.chain())
        if tags & {"gpu", "hosts", "state"}:
            self.query_one(UsageChart).show(job, self.fleet)
            self.query_one(GpuStrip).show(job)
        if tags & {"state", "policy"}:
            self.refresh_bindings()

    def _show_removed(self) -> None:
        """Removed from every host (`gpudeck rm`): said where a proposal shows; no job key applies."""
        line = Content.styled(
            f"{self.job_id} was removed (gpudeck rm): its output and journal are gone", "$error"
        )
        self.query_one("#proposal", Static).update(line)
        self.query_one(OutputLog).border_title = "removed"
        self.refresh_bindings()

    def _show_proposal(self, job: JobModel) -> None:
        """The rules' first proposal for the job, as Content (rule names and reasons are the user's text)."""
        line = self.query_one("#proposal", Static)
        found = self.fleet.proposals.get(job.id)
        line.display = bool(found)
        if not found:
            return
        d = found[0]
        what = f"{d.frm} → {d.to}" + (" nodes" if d.kind != "vertical" else "")
        more = f"   (+{len(found) - 1} more)" if len(found) > 1 else ""
        keys = "   y accept · d dismiss" if d.action != "refused" else "   d dismiss"
        line.update(
            Content.assemble(
                ("proposal ", "bold $warning"),
                (d.rule, "bold"),
                ": ",
                what,
                "  ",
                d.reason,
                (keys, "$text-muted"),
                more,
            )
        )

    def on_resize(self, event: events.Resize) -> None:  # AppKeysFirst's runs as well
        self._draw(frozenset({"series", "gpu"}))

    def action_loss_log_scale(self) -> None:
        chart = self.query_one(LossChart)
        chart.log_scale = not chart.log_scale
        self._draw(frozenset({"series"}))

    def action_loss_smoothing(self) -> None:
        chart = self.query_one(LossChart)
        chart.smooth = not chart.smooth
        self._draw(frozenset({"series"}))

    def action_loss_x_axis(self) -> None:
        chart = self.query_one(LossChart)
        chart.x_time = not chart.x_time
        self._draw(frozenset({"series"}))

    def action_toggle_follow(self) -> None:
        self.query_one("#output", OutputLog).toggle_follow()

    def on_output_log_follow_changed(self, event: OutputLog.FollowChanged) -> None:
        event.log.border_title = None if event.follow else "not following (f follows)"
