"""The main screen: the fleet summary, then the Fleet and Jobs views in tabs; job keys act on the
selected row. The app's services keep the model live and act on the jobs."""

from __future__ import annotations

import time
from functools import partial

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane

from ..actions.options import DEMO_COMMAND
from ..actions.slurm_form import SlurmForm
from ..export_rows import fleet_gpus
from ..fleet import Fleet, JobModel
from ..format import money
from ..messages import FleetUpdated
from ..services import CloudInstances, Connections, JobControl
from ..services.jobs import refused_read_only
from ..services.slurm_forms import slurm_forms
from ..widgets.cloud_view import CloudView, Status
from ..widgets.export_view import EXPORT_BINDING, export, table_rows
from ..widgets.failures import guarded, say
from ..widgets.fleet_view import FleetView
from ..widgets.footer import DeckFooter
from ..widgets.jobs_table import JobsTable
from ..widgets.summary import FleetSummaryBar
from .cloud_launch import CloudLaunchScreen
from .confirm import ConfirmScreen
from .gpu_pick import GpuPickScreen, PickedGpu
from .hostkey import confirm_key
from .job import JobScreen
from .job_actions import JOB_ACTIONS, JOB_BINDINGS, JobActions
from .launch import LaunchRequest, LaunchScreen
from .procs import ProcessesScreen
from .sight import in_sight

FIRST_RUN = (
    "No jobs yet. Press n to launch one: the demo trainer (python -m trainer) is prefilled, "
    "so you can watch a loss fall right away."
)


class DeckScreen(JobActions):
    CSS_PATH = "deck.tcss"
    BINDINGS = [
        Binding("n", "new_job", "New job", id="new_job"),
        Binding("enter", "open_job", "Open", id="open_job"),
        *JOB_BINDINGS,
        Binding("p", "gpu_procs", "Procs", id="gpu_procs", tooltip="the processes on one GPU of the fleet"),
        Binding(
            "slash",
            "filter_jobs",
            "Filter",
            id="filter_jobs",
            tooltip="show jobs whose name, host or state has…",
        ),
        Binding("o", "sort_jobs", "Sort", id="sort_jobs", tooltip="cycle the jobs' sort column"),
        Binding("O", "reverse_sort", "Reverse", id="reverse_jobs", tooltip="the jobs' sort the other way"),
        Binding(
            "a",
            "toggle_ended",
            "Ended",
            id="toggle_ended",
            tooltip="hide the ended jobs / show everything, resize chains unfolded / fold them",
        ),
        Binding("escape", "clear_filter", "Clear filter", id="clear_filter"),
        Binding("1", "show_tab('fleet')", "Fleet", id="show_fleet"),
        Binding("2", "show_tab('jobs')", "Jobs", id="show_jobs"),
        Binding(
            "3", "show_tab('cloud')", "Cloud", id="show_cloud", tooltip="your AWS and Aliyun GPU instances"
        ),
        EXPORT_BINDING,
    ]

    def __init__(
        self,
        fleet: Fleet,
        connections: Connections,
        job_control: JobControl,
        replay: str | None = None,
        cloud: CloudInstances | None = None,
    ) -> None:
        super().__init__()
        self.fleet, self.connections, self.job_control, self.replay = fleet, connections, job_control, replay
        self.cloud = cloud  # None: no Cloud tab (a replay shows the recorded hosts only)

    def compose(self) -> ComposeResult:
        summary = FleetSummaryBar(id="summary")
        summary.replay = self.replay
        summary.read_only = self.job_control.read_only
        yield summary
        with TabbedContent(initial="fleet", id="tabs"):
            with TabPane("Fleet", id="fleet"):
                yield FleetView(id="fleet-view")
            with TabPane("Jobs", id="jobs"):
                yield Static(FIRST_RUN, id="first-run")
                yield Input(
                    placeholder="filter: part of a name, host or state (enter: keep, esc: clear)",
                    id="job-filter",
                    compact=True,
                )
                yield JobsTable(id="jobs-table")
            if self.cloud is not None:
                with TabPane("Cloud", id="cloud"):
                    yield CloudView(id="cloud-view")
        yield DeckFooter()

    def on_mount(self) -> None:
        self._draw(frozenset({"hosts", "job"}))

    # -- drawing -------------------------------------------------------------------------------
    # Only what is in sight is drawn: the tab shown (the other catches up when it is shown), and
    # nothing while another screen covers the deck (it catches up when it is back on top).

    def on_fleet_updated(self, message: FleetUpdated) -> None:
        if in_sight(self):
            self._draw(message.tags)
        else:
            self._missed |= message.tags

    _missed: frozenset[str] = frozenset()

    def on_screen_resume(self) -> None:
        tags, self._missed = self._missed, frozenset()
        self._draw(tags)

    @guarded("fleet view")
    def _draw(self, tags: frozenset[str]) -> None:
        now = time.time()
        self.query_one(FleetSummaryBar).show(self.fleet)
        active = self.query_one(TabbedContent).active
        if active == "jobs":
            self.query_one(JobsTable).show(self.fleet, now)
        else:
            self.query_one(FleetView).show(self.fleet, now)
        self.query_one("#first-run").display = not self.fleet.jobs and not self.fleet.queued
        if tags & {"job", "state", "policy"}:
            self.refresh_bindings()
        if self.cloud is not None and tags & {"cloud", "clock"} and active == "cloud":
            self._draw_cloud()  # the Cloud tab only when shown: it catches up when it is (its layout is costly)

    def _draw_cloud(self) -> None:
        c = self.cloud
        assert c is not None
        self.query_one(CloudView).show(
            c.snapshot,
            Status(
                c.clock(),
                c.interval,
                c.refreshing,
                c.failure,
                frozenset(c.busy),
                c.settings.cost.currency,
                dict(c.settings.cost.fx),
            ),
        )

    # -- the selected job ------------------------------------------------------------------------

    def current_job(self) -> JobModel | None:
        if self.query_one(TabbedContent).active != "jobs":
            return None
        job_id = self.query_one(JobsTable).selected_id
        return self.fleet.jobs.get(job_id) if job_id else None

    def queued_job(self) -> str | None:
        """The id of the queued job under the cursor (the jobs tab's first rows)."""
        if self.query_one(TabbedContent).active != "jobs":
            return None
        return self.query_one(JobsTable).selected_queued

    def action_stop_job(self) -> None:
        job_id = self.queued_job()
        if job_id is None:
            super().action_stop_job()
            return
        if refused_read_only(self.app, "taking a job out of the queue"):
            return
        entry = next((e for e in self.fleet.queued if e.get("id") == job_id), {})
        label = str(entry.get("name") or job_id)
        watch = getattr(self.app, "queue_watch", None)
        if watch is None:
            return
        self.app.push_screen(
            ConfirmScreen(f"Take {label} out of the queue?", "It never starts; nothing ran yet.", "Dequeue"),
            lambda yes: watch.cancel(job_id) if yes else None,
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        tab = self.query_one(TabbedContent).active
        if action == "show_tab" and parameters == ("cloud",) and self.cloud is None:
            return False  # a replay has no Cloud tab: `3` is not offered (it would name a missing tab)
        if tab == "cloud" and (action in JOB_ACTIONS or action in ("new_job", "open_job")):
            return False  # the Cloud tab's footer shows the instances' keys, not the jobs'
        if action == "open_job" and self.current_job() is None:
            return None
        if action == "stop_job" and self.queued_job() is not None:
            return True  # `s` on a waiting row takes it out of the queue
        on_jobs = tab == "jobs"
        gpus_here = not on_jobs and any(h.gpus for h in self.fleet.hosts.values())
        if action == "gpu_procs":  # the fleet's `p`; on the jobs tab `p` is the selected job's
            return gpus_here
        if action == "job_procs" and gpus_here:
            return False  # hidden: the Footer shows the fleet's `p` instead
        if action in ("filter_jobs", "sort_jobs", "reverse_sort", "toggle_ended"):
            return on_jobs
        if action == "clear_filter":
            return on_jobs and (
                self.query_one("#job-filter").display or bool(self.query_one(JobsTable).filter_text)
            )
        return super().check_action(action, parameters)

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self.refresh_bindings()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_job()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "cloud" and self.cloud is not None:
            self.cloud.start()  # the providers are asked only once the user looks
            self._draw_cloud()
            return
        self._draw(frozenset())  # the tab now shown catches up with what it missed
        self.refresh_bindings()

    # -- actions ---------------------------------------------------------------------------------

    def action_export_view(self) -> None:
        """E: the fleet's GPUs or the jobs table's rows, to CSV and JSON files."""
        if self.query_one(TabbedContent).active == "fleet":
            export(self, "fleet", *fleet_gpus(self.fleet.hosts))
        else:
            export(self, "jobs", *table_rows(self.query_one(JobsTable), key="id"))

    def action_show_tab(self, tab: str) -> None:
        if tab == "cloud" and self.cloud is None:
            return  # no such tab here (a replay); the binding is hidden too
        self.query_one(TabbedContent).active = tab
        if tab == "jobs":
            self.query_one(JobsTable).focus()
        elif tab == "cloud":
            self.query_one("#cloud-table").focus()

    def action_filter_jobs(self) -> None:
        self.action_show_tab("jobs")
        field = self.query_one("#job-filter", Input)
        field.display = True
        field.focus()
        self.refresh_bindings()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "job-filter":
            self.query_one(JobsTable).filter_text = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "job-filter":
            event.stop()
            event.input.display = bool(event.value)  # an empty filter goes away
            self.query_one(JobsTable).focus()
            self.refresh_bindings()

    def action_clear_filter(self) -> None:
        field = self.query_one("#job-filter", Input)
        field.value, field.display = "", False
        self.query_one(JobsTable).filter_text = ""
        self.query_one(JobsTable).focus()
        self.refresh_bindings()

    def action_sort_jobs(self) -> None:
        self.query_one(JobsTable).cycle_sort()

    def action_reverse_sort(self) -> None:
        table = self.query_one(JobsTable)
        table.sort_reverse = not table.sort_reverse

    def action_toggle_ended(self) -> None:
        """Cycles: ended shown, resize chains folded (the start) → ended hidden → everything, each
        job a resize replaced too → back to the start."""
        table = self.query_one(JobsTable)
        if not table.show_ended:
            table.show_ended, table.fold = True, False
            say(self.app, "all jobs shown, resize chains unfolded (a: fold them)", timeout=2)
        elif not table.fold:
            table.fold = True
            say(self.app, "ended jobs shown, resize chains folded", timeout=2)
        else:
            table.show_ended = False
            say(self.app, "ended jobs hidden (a: show them all)", timeout=2)

    def action_open_job(self) -> None:
        job = self.current_job()
        if job is not None:
            self.app.push_screen(JobScreen(self.fleet, self.connections, self.job_control, job.id))

    def action_gpu_procs(self) -> None:
        self.app.push_screen(GpuPickScreen(self.fleet), self._open_gpu)

    def _open_gpu(self, picked: PickedGpu | None) -> None:
        if picked is None:
            return
        host, index = picked
        gpu = (
            next((g for g in self.fleet.hosts[host].gpus if g.index == index), None)
            if host in self.fleet.hosts
            else None
        )
        job = self.fleet.job_for_gpu(host, gpu.uuid if gpu else None)  # `s`/`K` there act on it
        self.app.push_screen(
            ProcessesScreen(
                self.fleet, self.connections, self.job_control, job_id=job.id if job else None, gpu=picked
            )
        )

    def action_new_job(self) -> None:
        if refused_read_only(self.app, "new job"):
            return
        hosts = self.connections.hosts() or ["local"]
        command = "" if self.fleet.jobs else DEMO_COMMAND  # first run: offer the demo trainer

        def opened(forms: dict[str, SlurmForm]) -> None:
            self.app.push_screen(LaunchScreen(hosts, command, slurm=forms), self._launch)

        # hosts.toml is read on a worker: a slow disk or home on NFS never freezes the key press
        self.connections.in_thread(
            partial(slurm_forms, hosts), group="new-job-form", exclusive=True, done=opened
        )

    # -- the Cloud tab's asks --------------------------------------------------------------------

    def on_cloud_view_act(self, message: CloudView.Act) -> None:
        from ..actions.cloud import stop_refusal
        from ..widgets.cloud_view import usage_text

        cloud, v = self.cloud, message.view
        if cloud is None or cloud.refused(message.verb):
            return
        i = v.instance
        why = (
            stop_refusal(i)
            if message.verb == "stop"
            else (f"{i.id} is already {i.state}" if i.state in ("running", "pending") else None)
        )
        if why:
            say(self.app, why, f"cloud {message.verb}", "warning")
            return
        price = money(v.price.per_hour, v.price.currency, "/h", unknown="price unknown")
        name = f"{i.name} ({i.id})" if i.name and i.name != i.id else i.id
        detail = (
            f"{i.type} {i.lifecycle}, {i.provider} {i.zone or i.region}, {i.state}, {price}. "
            + (f"{usage_text(v, cloud.clock())}. " if message.verb == "stop" else "")
            + (
                "Its compute stops billing; its disks stay."
                if message.verb == "stop"
                else "It bills from now on."
            )
        )
        self.app.push_screen(
            ConfirmScreen(f"{message.verb.capitalize()} {name}?", detail, yes=message.verb.capitalize()),
            lambda yes: cloud.act(message.verb, v) if yes else None,
        )

    def on_cloud_view_launch_asked(self, _: CloudView.LaunchAsked) -> None:
        cloud = self.cloud
        if cloud is None or cloud.refused("launch"):
            return
        snap = cloud.snapshot
        used = sorted({v.instance.provider for v in snap.views}) if snap else []
        providers = used + [p for p in ("aws", "aliyun") if p not in used]
        self.app.push_screen(
            CloudLaunchScreen(providers, set(self.connections.hosts())),
            lambda req: cloud.launch(req, partial(confirm_key, self.app)) if req else None,
        )

    def on_cloud_view_refresh_asked(self, _: CloudView.RefreshAsked) -> None:
        if self.cloud is not None:
            self.cloud.refresh()

    def restarted(self, new_id: str) -> None:
        self.query_one(JobsTable).select_when_shown(new_id)

    def _launch(self, request: LaunchRequest | None) -> None:
        if request is None:
            return
        self.job_control.launch(request.options, request.job_id)
        self.query_one(JobsTable).select_when_shown(request.job_id)
        self.action_show_tab("jobs")
