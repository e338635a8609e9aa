"""The gpudeck app: registers the themes, opens the deck, fans fleet changes out to the screens,
and turns job endings into notifications. Everything else lives in screens/ and widgets/."""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen
from textual.worker import Worker

from . import app_escape_key, config, paths, typeahead
from .cost.report import CostContext
from .errors import GpudeckError
from .fleet import Fleet, JobModel
from .live.link import TransportFactory
from .messages import (
    CostBoardUpdated,
    CostNote,
    FleetChanged,
    FleetUpdated,
    HostKeyChangedNotice,
    InboxPending,
    JobEnded,
)
from .notify_desktop import StallNotices
from .policy.rules import Policies, PolicyError
from .policy.rules import load as load_policies
from .printable import printable
from .remote.hostkey_errors import fingerprint
from .screens.command_line import CommandLineScreen, run_command
from .screens.deck import DeckScreen
from .screens.help import HelpScreen
from .screens.hostkey import HostKeyScreen, confirm_key
from .screens.job import JobScreen
from .screens.job_actions import JOB_BINDINGS
from .screens.job_ports import close_ended
from .screens.logs import LogScreen
from .screens.proc_keys import ProcKeys
from .screens.procs import ProcessesScreen
from .screenshot_dir import screenshot_dir
from .services import CloudInstances, Connections, Costs, JobControl, Proposals
from .services.background import Background
from .services.endings import Endings
from .services.jobs import StoreFactory
from .services.notify_late import LateNotify
from .services.queue_watch import QueueWatch
from .session import LOCAL, Session, transport_for
from .settings import Settings, load_or_default
from .store import Store
from .themes import DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes, solid_muted
from .widgets.cloud_view import CloudView
from .widgets.failures import guarded, report, say
from .widgets.jobs_table import JobsTable
from .widgets.output_log import OutputLog
from .widgets.virtual_log import VirtualLog


def _open_store(warn: Callable[[str], None] | None = None) -> Store:
    return Store(paths.ensure_private(paths.data_dir()) / "state.db", warn=warn)


def binding_ids() -> set[str]:
    """Every key binding's id: what config.toml's [keys] may remap. Derived from every gpudeck screen
    and widget class (all imported by now), so a new one cannot be forgotten here."""
    seen: set[str] = set()
    todo: list[type] = [DOMNode]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("tui."):
            seen |= {b.id for b in vars(cls).get("BINDINGS", ()) if isinstance(b, Binding) and b.id}
    return seen


def binding_id(b: object) -> str | None:
    return b.id if isinstance(b, Binding) else None


def binding_ids_of(cls: type) -> set[str]:
    return {b.id for b in vars(cls).get("BINDINGS", ()) if isinstance(b, Binding) and b.id}


# Kept out of the palette: Textual's own help panel (lists widget internals; `?` is gpudeck's) and
# maximize; moving a cursor, quitting (Textual's Quit is there) and closing a dialog are not commands.
TEXTUAL_INTERNALS = frozenset({"Keys", "Maximize"})
NOT_IN_PALETTE = frozenset(
    {"quit", "help_close", "vim_down", "vim_up", "vim_top", "vim_bottom", "log_page_up", "log_page_down"}
)


class GpuDeckApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "gpudeck"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("t", "next_theme", "Next theme", id="next_theme", tooltip="cycle gpudeck's themes"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding(
            "colon",
            "command_line",
            "Cmd",
            id="command_line",
            tooltip=":jobs :job NAME :logs NAME :theme NAME :q",
        ),
    ]

    def __init__(
        self,
        hosts: list[str] | None = None,
        transport: TransportFactory | None = None,
        store: StoreFactory | None = _open_store,
        clock: Callable[[], float] | None = None,
        settings: Settings | None = None,
        replay: str | None = None,
        read_only: bool = False,
        host_settings: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> None:
        """host_settings: a host's price settings instead of hosts.toml's (a replay: as recorded)."""
        super().__init__()
        self.replay = replay  # the recording played (`gpudeck --replay FILE`): the header says REPLAY
        self.fleet = Fleet(clock) if clock is not None else Fleet()  # clock: fixed in snapshot tests
        self.startup_errors: list[str] = []
        self.crash: str | None = None  # the line an unhandled exception ends the app with
        if settings is None:
            settings, error = load_or_default()
            if error:
                self.startup_errors.append(error)
        self.settings = settings
        if hosts is None:
            try:
                hosts = Session().hosts()
            except GpudeckError as exc:  # a broken hosts.toml: still show the local machine
                hosts = [LOCAL]
                self.startup_errors.append(str(exc))
        factory = transport or (lambda host: transport_for(host, self._confirm_key, config=settings))
        self.connections = Connections(
            self, self.fleet, hosts, factory, settings.ssh, settings.ui.kept_ended_jobs
        )
        self.read_only = read_only or settings.ui.read_only  # --read-only or [ui] read_only: no actions
        self.job_control = JobControl(self, self.connections, store, self.read_only)
        self.costs = Costs(
            self,
            self.fleet,
            CostContext.of(settings.cost),
            stop=lambda job, reason: self.job_control.end(job, "stop", reason),
            changed=self.connections.publish,
            ledger=store is not None,
            request=self.connections.request,
            settings_for=host_settings,
        )
        self.connections.sinks.append(self.costs)
        self.background = Background(self)  # the app's own, its screens' and its widgets' blocking work
        policies = self._policies() if replay is None else Policies()  # a replay proposes nothing
        self.proposals = Proposals(
            self,
            self.fleet,
            policies,
            self.connections.publish,
            self.job_control.scale,
            move=self.job_control.move,
        )
        self.endings = Endings(
            self, self.fleet, self.job_control, self._tell_ended, lambda line: say(self, line, "jobs ended")
        )
        self.stall_notices = StallNotices()  # one toast and desktop notice per stall
        self.cloud = CloudInstances(
            self, self.fleet, settings, self.connections.publish, self.read_only, clock=clock or time.time
        )
        self.cloud.added_host = self.connections.add_host
        self.late_notify = LateNotify(
            self, self.fleet, self.connections, settings.notify
        )  # [notify]'s apprise targets
        self.costs.cloud_budget = self.cloud.budget_reached
        self.queue_watch = QueueWatch(self, self.fleet, self.connections.publish)
        # those that run workers
        self.services = (
            self.connections,
            self.job_control,
            self.background,
            self.proposals,
            self.endings,
            self.cloud,
            self.late_notify,
            self.queue_watch,
        )
        themes = load_themes()
        self.startup_errors += themes.errors
        for theme in themes.themes:
            self.register_theme(theme)
        self.deck_themes = themes.names or [self.theme]
        wanted = settings.ui.theme
        if wanted and wanted not in self.available_themes:
            self.startup_errors.append(f"theme {wanted!r} from config.toml is not installed")
            wanted = None
        self.theme = wanted or (DEFAULT_THEME if DEFAULT_THEME in self.available_themes else self.theme)
        if settings.keys:
            known = binding_ids()
            unknown = sorted(set(settings.keys) - known)
            if unknown:
                self.startup_errors.append(
                    f"{settings.path}: [keys] {', '.join(unknown)}: no such key binding "
                    f"(known: {', '.join(sorted(known))})"
                )
            self.set_keymap({k: v for k, v in settings.keys.items() if k in known})

    def _policies(self) -> Policies:
        try:
            return load_policies()
        except PolicyError as exc:  # said once; the TUI runs without rules
            self.startup_errors.append(str(exc))
            return Policies()

    def _fatal_error(self) -> None:
        """An exception nothing handled: the app ends with exit status 1 (App.return_code) and one
        line on stderr naming it and where it was raised, instead of Textual's traceback with its
        locals (which can hold a host's settings)."""
        self.bell()
        self.crash = crash_line(self._exception)  # said by run_app once the terminal is restored
        self._close_messages_no_wait()

    def get_css_variables(self) -> dict[str, str]:
        return solid_muted(super().get_css_variables())  # muted text readable in every theme

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)  # Textual's own themes lack gpudeck's variables

    keys_held = False  # main() holds the keys typed before the deck is up (a test's Pilot does not)

    async def on_event(self, event: events.Event) -> None:
        if self.keys_held and isinstance(event, events.Key):
            return  # typed during start-up, read by Textual before any screen could take it
        await super().on_event(event)

    def _take_keys(self) -> None:
        self.keys_held = False
        typeahead.flush()

    def on_mount(self) -> None:
        self.call_after_refresh(self._take_keys)  # after the deck's first frame
        self.costs.start()
        self.connections.start()
        self.proposals.start()
        self.endings.start()
        if not self.replay:
            self.late_notify.start()
            self.queue_watch.start()  # a replay plays the hosts, not this machine's queue
        self.push_screen(
            DeckScreen(
                self.fleet,
                self.connections,
                self.job_control,
                self.replay,
                cloud=None if self.replay else self.cloud,
            )
        )
        for error in self.startup_errors:
            report(self, "configuration", error, "warning")
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def on_unmount(self) -> None:
        self.connections.stop()
        self.costs.stop()
        self.job_control.close()

    # -- the services' news ------------------------------------------------------------------------

    @guarded("fleet update")
    def on_inbox_pending(self, _: InboxPending) -> None:
        self.connections.pending()

    def on_fleet_changed(self, message: FleetChanged) -> None:
        if message.tags & {"job", "state"}:
            self.endings.scan()
            close_ended(self)  # forwards of a job that ended (screens/job_ports.py)
        if "stalled" in message.tags:
            self._tell_stalls()
        for screen in self.screen_stack:
            if isinstance(screen, DeckScreen | JobScreen | LogScreen):
                screen.post_message(FleetUpdated(message.tags))

    @guarded("cost counters")
    def on_cost_board_updated(self, message: CostBoardUpdated) -> None:
        self.costs.updated(message.board)

    def on_cost_note(self, message: CostNote) -> None:
        self.costs.note(message.text)

    def on_job_ended(self, message: JobEnded) -> None:
        self.endings.ended(message.job)  # told once ever: state.db remembers what was shown

    def _tell_ended(self, job: JobModel) -> None:
        name = job.name or job.id
        if job.state == "failed":
            say(self, f"{name} failed: {job.why}", "job ended", "error", timeout=10)
        else:
            say(self, " ".join(filter(None, [name, job.state, job.why and f"({job.why})"])), "job ended")
        self.bell()
        if self.settings.notify.desktop:  # [notify] desktop: the terminal's (or the desktop's) own notice
            self._desktop(f"gpudeck: {name} {job.state}", job.why or "")

    def _tell_stalls(self) -> None:
        for job, why in self.stall_notices.fresh(self.fleet.jobs.values()):
            name = job.name or job.id
            say(self, f"{name} stalled: {why}", "job stalled", "warning", timeout=10)
            if self.settings.notify.desktop:
                self._desktop(f"gpudeck: {name} stalled", why)

    def _desktop(self, title: str, body: str) -> None:
        from .notify_desktop import escapes, notify_send

        if self._driver is not None:
            self._driver.write(escapes(title, body))
        self.background.in_thread(partial(notify_send, title, body), group="desktop")

    # -- SSH host keys ---------------------------------------------------------------------------

    def _confirm_key(self, name: str, key: Any) -> bool:
        """SSH's confirm for an unknown key; runs on a connect worker's thread."""
        return confirm_key(self, name, key)

    def on_host_key_changed_notice(self, message: HostKeyChangedNotice) -> None:
        key = getattr(message.error, "key", None)
        if key is not None:
            self.push_screen(HostKeyScreen(message.host, key.get_name(), fingerprint(key), changed=True))

    # -- themes ------------------------------------------------------------------------------------

    def action_next_theme(self) -> None:
        names = self.deck_themes
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        say(self, f"theme: {self.theme}", timeout=2)

    def _theme_changed(self, theme: object) -> None:
        name = getattr(theme, "name", None)
        if isinstance(name, str):
            self.background.in_thread(
                partial(config.save_theme, name),
                group="save-theme",
                exclusive=True,
                failed=lambda exc: report(self, "theme not saved", exc, "warning"),
            )

    @guarded("background task")
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        for service in self.services:  # each worker's outcome goes to the callback its service gave
            if service.worker_changed(event.worker, event.state):
                return

    def action_command_line(self) -> None:
        self.push_screen(CommandLineScreen(), partial(run_command, self))

    # -- help and palette --------------------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(
            HelpScreen(
                [
                    # every place with all its keys: the help merges a key's places into one row
                    ("everywhere", list(self.BINDINGS)),
                    ("fleet tab", [b for b in DeckScreen.BINDINGS if binding_id(b) == "gpu_procs"]),
                    ("jobs tab", list(JOB_BINDINGS)),
                    (
                        "fleet & jobs",
                        [
                            b
                            for b in DeckScreen.BINDINGS
                            if b not in JOB_BINDINGS and binding_id(b) != "gpu_procs"
                        ],
                    ),
                    ("job view", list(JobScreen.BINDINGS)),
                    ("full log", list(LogScreen.BINDINGS)),
                    ("jobs table", list(JobsTable.BINDINGS)),
                    ("cloud tab", list(CloudView.BINDINGS)),
                    ("process view", [*ProcessesScreen.BINDINGS, *ProcKeys.BINDINGS]),
                    (
                        "output",
                        [
                            *OutputLog.BINDINGS,
                            *(
                                b
                                for b in VirtualLog.BINDINGS
                                if isinstance(b, Binding) and b.id not in binding_ids_of(OutputLog)
                            ),
                        ],
                    ),
                ]
            )
        )

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        return super().deliver_screenshot(filename, path or str(screenshot_dir()), time_format)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's app commands (theme, quit, screenshot), then gpudeck's own keys that apply now:
        none of the widgets' internals (cursor keys, copy, focus), each once, its key as typed."""
        for command in super().get_system_commands(screen):
            if command.title not in TEXTUAL_INTERNALS:
                yield command
        ours, seen = binding_ids() - NOT_IN_PALETTE, set()
        bindings = getattr(screen, "palette_bindings", None) or screen.active_bindings  # whole labels
        for active in bindings.values():
            b = active.binding
            if not (active.enabled and b.description and b.id in ours) or b.id in seen:
                continue
            seen.add(b.id)
            key = self.get_key_display(b)
            yield SystemCommand(
                b.description,
                f"{key} · {b.tooltip}" if b.tooltip else f"key: {key}",
                partial(self.run_action, b.action, active.node),
            )  # as the node's own run_action


def crash_line(exc: BaseException | None) -> str:
    """One line for an unhandled exception: its type, message and gpudeck's innermost frame."""
    if exc is None:
        return "gpudeck: the TUI stopped on an unexpected error"
    ours = [f for f in traceback.extract_tb(exc.__traceback__) if "/tui/" in f.filename.replace("\\", "/")]
    where = (
        f" (at tui/{ours[-1].filename.split('/tui/')[-1]}:{ours[-1].lineno} in {ours[-1].name})"
        if ours
        else ""
    )
    text = printable(" ".join(str(exc).split()))  # one line, no control bytes, whatever it holds
    return f"gpudeck: the TUI stopped on an unexpected error: {type(exc).__name__}: {text}{where}"


def run_app(app: App[Any], **run: Any) -> int:
    """Runs the app; its exit status: 1 after an unhandled exception (said in one line), else 0."""
    app.run(**run)
    crash = getattr(app, "crash", None)  # a GpuDeckApp's
    if crash:
        sys.stderr.write(crash + "\n")  # not Rich's console: it would wrap the line at 80 columns
    return app.return_code or 0


def main(replay: str | None = None, read_only: bool = False) -> int:
    """replay: the recording being played (`gpudeck --replay FILE`); it must not touch state.db, or
    recorded jobs would land in the user's cost ledger. Returns the exit status."""
    from . import session as session_mod

    recording = session_mod.replay.recording if replay and session_mod.replay else None
    app = GpuDeckApp(
        store=None if replay else _open_store,
        replay=replay,
        read_only=read_only,
        host_settings=recording.host_settings if recording else None,
    )
    if replay:
        app.sub_title = f"replay of {replay} (read-only)"
    app_escape_key.install()
    app.keys_held = True  # until its screens are up: a key typed during start-up is not acted on late
    typeahead.flush()
    return run_app(app)
