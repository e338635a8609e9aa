"""The gpudeck app: registers the themes, opens the deck, fans fleet changes out to the screens,
and turns job endings into notifications. Everything else lives in screens/ and widgets/."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from . import config, paths
from .fleet import Fleet
from .live.link import TransportFactory
from .messages import FleetUpdated
from .screens.deck import DeckScreen
from .screens.help import HelpScreen
from .screens.job import JobScreen
from .screens.logs import LogScreen
from .session import Session, transport_for
from .store import Store
from .themes import DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes
from .widgets.failures import report
from .widgets.feed import FleetFeed


def _open_store() -> Store:
    return Store(paths.ensure_private(paths.data_dir()) / "state.db")


class GpuDeckApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "gpudeck"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("t", "next_theme", "Theme", id="next_theme"),
        Binding("question_mark", "help", "Help", id="help"),
    ]

    def __init__(self, hosts: list[str] | None = None, transport: TransportFactory = transport_for,
                 store: Callable[[], Store | None] | None = _open_store) -> None:
        super().__init__()
        self.fleet = Fleet()
        self.feed = FleetFeed(self.fleet, hosts or Session().hosts(), transport, store, id="feed")
        self.startup_errors: list[str] = []
        themes = load_themes()
        self.startup_errors += themes.errors
        for theme in themes.themes:
            self.register_theme(theme)
        self.deck_themes = themes.names or [self.theme]
        try:
            wanted = config.theme_name(config.load())
        except config.ConfigError as exc:
            wanted = None
            self.startup_errors.append(str(exc))
        if wanted and wanted not in self.available_themes:
            self.startup_errors.append(f"theme {wanted!r} from config.toml is not installed")
            wanted = None
        self.theme = wanted or (DEFAULT_THEME if DEFAULT_THEME in self.available_themes else self.theme)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)  # Textual's own themes lack gpudeck's variables

    def on_mount(self) -> None:
        self.push_screen(DeckScreen(self.fleet, self.feed))
        for error in self.startup_errors:
            report(self, "configuration", error, "warning")
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    # -- fleet fan-out ---------------------------------------------------------------------------

    def on_fleet_feed_changed(self, message: FleetFeed.Changed) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, DeckScreen | JobScreen):
                screen.post_message(FleetUpdated(message.tags))

    def on_fleet_feed_job_ended(self, message: FleetFeed.JobEnded) -> None:
        job = message.job
        name = job.name or job.id
        if job.state == "failed":
            why = job.cause or (f"exit code {job.exit_code}" if job.exit_code is not None else job.signal)
            self.notify(f"{name} failed: {why}", title="job ended", severity="error", timeout=10)
        else:
            self.notify(f"{name} {job.state}", title="job ended")
        self.bell()

    # -- themes ------------------------------------------------------------------------------------

    def action_next_theme(self) -> None:
        names = self.deck_themes
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"theme: {self.theme}", timeout=2)

    def _theme_changed(self, theme: object) -> None:
        name = getattr(theme, "name", None)
        if isinstance(name, str):
            self.run_worker(partial(config.save_theme, name), name="save-theme", group="save-theme",
                            thread=True, exclusive=True, exit_on_error=False)

    def on_worker_state_changed(self, event: object) -> None:
        worker = getattr(event, "worker", None)
        if worker is not None and worker.name == "save-theme" and worker.error is not None:
            report(self, "theme not saved", worker.error, "warning")

    # -- help and palette --------------------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpScreen([
            ("everywhere", list(self.BINDINGS)),
            ("fleet & jobs", list(DeckScreen.BINDINGS)),
            ("job view", [b for b in JobScreen.BINDINGS if b not in DeckScreen.BINDINGS]),
            ("full log", [b for b in LogScreen.BINDINGS if b not in JobScreen.BINDINGS]),
        ]))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        # Every enabled key of the screen is a command too, so nothing needs a key to be found.
        for active in screen.active_bindings.values():
            b = active.binding
            if active.enabled and b.description and b.id not in ("quit", "help_close"):
                yield SystemCommand(b.description, b.tooltip or f"key: {b.key}",
                                    partial(active.node.run_action, b.action))
        yield SystemCommand("Next theme", "cycle gpudeck's themes (t)", self.action_next_theme)


def main() -> None:
    GpuDeckApp().run()
