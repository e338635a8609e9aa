"""The screens' footer (issue #17): the same keys are not composed again at every binding refresh,
and the keys of a recompose do not stay alive (Textual's Footer kept every FooterKey it ever made,
70 → 225 MiB over 200 tab switches of an empty app)."""

from __future__ import annotations

import gc

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets._footer import FooterKey

from tests.support.tui import sync, until
from tui.screens.footer_order import AppKeysFirst
from tui.widgets.footer import WATCHERS, DeckFooter


class _Keys(Screen[None]):
    BINDINGS = [
        Binding("a", "one", "One"),
        Binding("b", "two", "Two"),
        Binding("c", "three", "Three"),
        Binding("d", "four", "Four"),
        Binding("e", "five", "Five"),
    ]
    two_on = True
    tab = "wide"  # "narrow": one and three hidden, as the deck hides another tab's keys

    def compose(self) -> ComposeResult:
        yield DeckFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("four", "five"):
            return self.tab == "wider"
        if action in ("one", "three") and self.tab == "narrow":
            return False
        return (True if self.two_on else None) if action == "two" else True  # None: shown dimmed


class _App(App[None]):
    ENABLE_COMMAND_PALETTE = False  # just the screen's three keys

    def on_mount(self) -> None:
        self.push_screen(_Keys())


async def _keys_shown(pilot: Pilot, app: _App) -> tuple[_Keys, DeckFooter]:
    """The test screen and its footer, once its first three keys are on show."""
    screen = app.screen
    assert isinstance(screen, _Keys)
    footer = screen.query_one(DeckFooter)
    await until(pilot, lambda: len(footer.query(FooterKey)) == 3, "the keys")
    return screen, footer


def _live_keys() -> int:
    gc.collect()
    return sum(isinstance(o, FooterKey) and not o._closed for o in gc.get_objects())


@pytest.mark.slow
@sync
async def test_footer_composes_only_new_keys_and_lets_old_ones_go() -> None:
    app = _App()
    async with app.run_test(size=(100, 10)) as pilot:
        screen, footer = await _keys_shown(pilot, app)
        composed = footer.query(FooterKey).first()
        for _ in range(5):  # nothing changed: the same widgets stay
            screen.refresh_bindings()
            await pilot.pause()
        assert footer.query(FooterKey).first() is composed
        screen.tab = "wider"  # more keys than ever shown: composed again
        screen.refresh_bindings()
        await until(pilot, lambda: len(footer.query(FooterKey)) == 5, "five keys")
        assert footer.query(FooterKey).first() is not composed
        assert sum(len(w) for w in getattr(footer, WATCHERS).values()) <= 5  # only the keys on show
        assert _live_keys() <= 10  # the keys on show (and at most one set being replaced)


def _on_show(footer: DeckFooter) -> list[tuple[str, bool]]:
    """The keys the footer shows, left to right: (its words, dimmed)."""
    return [(str(k.render()).strip(), k.has_class("-disabled")) for k in footer.query(FooterKey) if k.display]


@pytest.mark.slow
@sync
async def test_other_keys_are_written_into_the_keys_on_show_not_composed_again() -> None:
    app = _App()
    async with app.run_test(size=(100, 10)) as pilot:
        screen, footer = await _keys_shown(pilot, app)
        slots = list(footer.query(FooterKey))
        for i in range(40):  # another tab's keys, "Two" enabled and disabled: the same widgets each time
            screen.tab, screen.two_on = ("narrow" if i % 2 else "wide"), i % 4 < 2
            screen.refresh_bindings()
            await pilot.pause()
            want = (
                [("b Two", not screen.two_on)]
                if screen.tab == "narrow"
                else [("a One", False), ("b Two", not screen.two_on), ("c Three", False)]
            )
            await until(pilot, lambda w=want: _on_show(footer) == w, f"{want} shown")  # type: ignore[misc]
            assert list(footer.query(FooterKey)) == slots


class _Wide(AppKeysFirst):
    BINDINGS = _Keys.BINDINGS

    def compose(self) -> ComposeResult:
        yield DeckFooter()


class _PaletteApp(App[None]):
    def on_mount(self) -> None:
        self.push_screen(_Wide())


def _palette_shown(footer: DeckFooter) -> bool:
    return any(k.has_class("-command-palette") and k.display for k in footer.query(FooterKey))


@pytest.mark.slow
@sync
async def test_a_narrow_terminal_loses_the_palettes_key_although_keys_are_written_in_place() -> None:
    app = _PaletteApp()
    async with app.run_test(size=(170, 10)) as pilot:
        footer = app.screen.query_one(DeckFooter)
        await until(pilot, lambda: _palette_shown(footer), "the palette's key, wide")
        await pilot.resize_terminal(100, 10)
        app.screen.refresh_bindings()
        await until(pilot, lambda: not _palette_shown(footer), "no palette key, narrow")
        await pilot.resize_terminal(170, 10)
        app.screen.refresh_bindings()
        await until(pilot, lambda: _palette_shown(footer), "the palette's key again")
