"""A yes/no question before anything that ends a job.

It starts focused on Cancel, and `y` (or the Yes button) works only once the dialog is armed, a
short moment after it became visible (its first paint, not its mount: a busy machine can paint late):
a `y` or enter typed for something else just before (the `.py` of a path, right after esc) cannot end
a job. Keys read before the dialog was visible are ignored whenever they are handled: Textual stamps
each key with the time it was read, and a loaded app may hand it over after the guard has passed.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import _time, events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Button, Label

now: Callable[[], float] = _time.get_time  # the clock Textual stamps events with (tests inject one)


class ConfirmScreen(ModalScreen[bool]):
    CSS_PATH = "modals.tcss"
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm_yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm_no"),
    ]
    ARM_DELAY = 0.4  # seconds during which Yes is refused; Cancel works at once

    armed: reactive[bool] = reactive(False, init=False)

    def __init__(self, question: str, detail: str = "", yes: str = "Yes") -> None:
        super().__init__(classes="modal")
        self.question, self.detail, self.yes = question, detail, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Content(self.question), classes="dialog-title")  # holds a job name
            if self.detail:
                yield Label(Content(self.detail), classes="dialog-detail")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes} (y)", variant="error", id="yes", disabled=True)
                yield Button("Cancel (n)", id="no")

    shown_at: float | None = None  # when the dialog was first painted (now()'s clock)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # a stray enter must not end a job
        self.call_after_refresh(self._shown)

    def _shown(self) -> None:
        self.shown_at = now()
        self.set_timer(self.ARM_DELAY, self._arm_when_due)

    def _arm_when_due(self) -> None:
        """Armed once ARM_DELAY has passed on now()'s clock since the dialog was shown."""
        left = (self.shown_at or 0.0) + self.ARM_DELAY - now()
        if left > 0:
            self.set_timer(min(left, self.ARM_DELAY), self._arm_when_due)
        else:
            self._arm()

    def _arm(self) -> None:
        self.armed = True

    def on_key(self, event: events.Key) -> None:
        if self.shown_at is not None and event.time >= self.shown_at:
            return
        bound = self.active_bindings.get(event.key)
        if bound is None or bound.binding.action != "answer(False)":  # no/esc are never delayed
            event.stop()  # typed before the dialog could be seen: no answer (no binding sees it)
            event.prevent_default()

    def watch_armed(self, armed: bool) -> None:
        self.query_one("#yes", Button).disabled = not armed
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer" and parameters == (True,) and not self.armed:
            return None  # not armed yet: the key is swallowed, nothing happens
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        yes = event.button.id == "yes"
        if yes and not self.armed:
            return
        self.dismiss(yes)

    def action_answer(self, yes: bool) -> None:
        if yes and not self.armed:
            return
        self.dismiss(yes)
