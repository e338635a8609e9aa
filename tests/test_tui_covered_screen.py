"""Issue 36: a screen under an opaque one paints nothing. Textual repainted the whole top screen
for each change below it, and again at each message the screen below handled after that (the
deck under a job view: a full job-view render a second under a dense stream)."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from tests.support.tui import sync, until
from tui.screens.covered import QuietWhenCovered
from tui.screens.deck import DeckScreen
from tui.screens.job import JobScreen
from tui.screens.logs import LogScreen


class Below(QuietWhenCovered):
    def compose(self) -> ComposeResult:
        yield Static("0", id="count")


class Opaque(Screen[None]):
    def compose(self) -> ComposeResult:
        yield Static("on top")


class Dialog(ModalScreen[None]):
    def compose(self) -> ComposeResult:
        yield Static("a question")


class Two(App[None]):
    def on_mount(self) -> None:
        self.push_screen(Below())


async def _full_renders_of_top(app: Two, pilot: Any, below: Below, changes: int) -> int:
    top = app.screen
    renders: list[int] = []
    real = top._compositor.render_full_update

    def counted(*args: Any, **kwargs: Any) -> Any:
        renders.append(1)
        return real(*args, **kwargs)

    top._compositor.render_full_update = counted  # type: ignore[method-assign]
    for i in range(changes):
        below.query_one("#count", Static).update(str(i + 1))
        await pilot.pause(0.05)
    await pilot.pause(0.1)
    return len(renders)


@sync
async def test_changes_under_an_opaque_screen_repaint_nothing_and_show_once_back() -> None:
    app = Two()
    async with app.run_test(size=(60, 10)) as pilot:
        below = app.screen
        assert isinstance(below, Below)
        await app.push_screen(Opaque())
        await pilot.pause()
        assert await _full_renders_of_top(app, pilot, below, 6) == 0
        app.pop_screen()
        await until(
            pilot, lambda: "6" in "".join(s.text for s in app.screen._compositor.render_strips()), "6 shown"
        )


@sync
async def test_under_a_dialog_the_screen_still_paints() -> None:
    app = Two()
    async with app.run_test(size=(60, 10)) as pilot:
        below = app.screen
        assert isinstance(below, Below)
        await app.push_screen(Dialog())
        await pilot.pause()
        await _full_renders_of_top(app, pilot, below, 3)
        shown = "".join(s.text for s in below._compositor.render_strips())
        assert "3" in shown  # it went on painting: the dialog lets it show through


def test_the_deck_the_job_view_and_the_full_log_are_quiet_when_covered() -> None:
    assert all(issubclass(s, QuietWhenCovered) for s in (DeckScreen, JobScreen, LogScreen))
