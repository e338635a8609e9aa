"""`:` — a command line at the bottom, like k9s: `:jobs`, `:fleet`, `:cloud`, `:job NAME`,
`:logs NAME`, `:theme NAME`, `:q`. Completes from the known names (→ or tab takes the suggestion);
a line that means nothing is said in one line under it, and the line stays to be fixed."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label

from .command_words import Command, CommandError, completions, parse


class CommandLineScreen(ModalScreen[Command | None]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="command_cancel"),
        Binding("tab", "complete", "Complete", id="command_complete", show=False),
    ]

    def compose(self) -> ComposeResult:
        app = self.app
        fleet = getattr(app, "fleet", None)
        jobs = list(fleet.jobs.values()) if fleet is not None else []
        self.themes = list(getattr(app, "deck_themes", None) or app.available_themes)
        with Vertical(classes="command-line"):
            yield Label(Content(""), id="command-error", classes="dialog-detail")
            yield Input(
                value=":",
                placeholder=":jobs  :fleet  :cloud  :job NAME  :logs NAME  :theme NAME  :q",
                suggester=SuggestFromList(completions(jobs, self.themes), case_sensitive=False),
                id="command-input",
                compact=True,
            )

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.focus()
        field.cursor_position = len(field.value)

    def action_complete(self) -> None:
        field = self.query_one(Input)
        if field._suggestion:
            field.value = field._suggestion
            field.cursor_position = len(field.value)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        fleet = getattr(self.app, "fleet", None)
        try:
            command = parse(event.value, fleet.jobs.values() if fleet is not None else (), self.themes)
        except CommandError as exc:
            self.query_one("#command-error", Label).update(Content(str(exc)))  # names are user text
            return
        self.dismiss(command)


def run_command(app: App[Any], command: Command | None) -> None:
    """Do what a command line said, from wherever the user was."""
    from .deck import DeckScreen
    from .job import JobScreen
    from .logs import LogScreen

    if command is None:
        return
    if command.verb == "quit":
        app.exit()
        return
    if command.verb == "theme":
        app.theme = command.arg
        return
    while len(app.screen_stack) > 1 and not isinstance(app.screen, DeckScreen):
        app.pop_screen()  # back to the deck: a tab, a job or its log opens from there
    deck = app.screen
    if not isinstance(deck, DeckScreen):
        return
    if command.verb in ("fleet", "jobs", "cloud"):
        deck.call_later(deck.run_action, f"show_tab({command.verb!r})")  # as its key: checked first
    elif command.verb == "job":
        app.push_screen(JobScreen(deck.fleet, deck.connections, deck.job_control, command.arg))
    elif command.verb == "logs":
        app.push_screen(LogScreen(deck.fleet, deck.connections, command.arg))
