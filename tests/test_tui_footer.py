"""The screens' footer (issue #17): the same keys are not composed again at every binding refresh,
and the keys of a recompose do not stay alive (Textual's Footer kept every FooterKey it ever made,
70 → 225 MiB over 200 tab switches of an empty app)."""

from __future__ import annotations

import gc

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets._footer import FooterKey

from tests.support.tui import sync, until
from tui.widgets.footer import WATCHERS, DeckFooter


class _Keys(Screen[None]):
    BINDINGS = [Binding("a", "one", "One"), Binding("b", "two", "Two"), Binding("c", "three", "Three")]
    two_on = True

    def compose(self) -> ComposeResult:
        yield DeckFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.two_on if action == "two" else True


class _App(App[None]):
    ENABLE_COMMAND_PALETTE = False  # just the screen's three keys

    def on_mount(self) -> None:
        self.push_screen(_Keys())


def _live_keys() -> int:
    gc.collect()
    return sum(isinstance(o, FooterKey) and not o._closed for o in gc.get_objects())


@pytest.mark.slow
@sync
async def test_footer_composes_only_new_keys_and_lets_old_ones_go() -> None:
    app = _App()
    async with app.run_test(size=(100, 10)) as pilot:
        screen = app.screen
        assert isinstance(screen, _Keys)
        footer = screen.query_one(DeckFooter)
        await until(pilot, lambda: len(footer.query(FooterKey)) == 3, "the keys")
        composed = footer.query(FooterKey).first()
        for _ in range(5):  # nothing changed: the same widgets stay
            screen.refresh_bindings()
            await pilot.pause()
        assert footer.query(FooterKey).first() is composed
        for i in range(40):  # "Two" enabled, disabled, …: a recompose each time
            screen.two_on = i % 2 == 1
            screen.refresh_bindings()
            await pilot.pause()
        await until(pilot, lambda: not footer.query(FooterKey)[1].disabled, "the last state shown")
        assert footer.query(FooterKey).first() is not composed
        assert sum(len(w) for w in getattr(footer, WATCHERS).values()) <= 3  # only the keys on show
        assert _live_keys() <= 6  # the keys on show (and at most one set being replaced)
