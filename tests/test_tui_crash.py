"""Issue 36 finding 1: the README's replay demo pressed `3` (a Cloud tab a replay does not have) and
crashed, exiting 0. Now `3` is not offered there, and any unhandled exception ends the app with exit
status 1 and one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

import tui.app
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.remote.replay import Recording
from tui.screens.deck import DeckScreen

DEMO = Path(__file__).parent.parent / "docs" / "gpu-fleet.jsonl"  # the README's `gpudeck --replay`


@sync
async def test_the_replay_demo_survives_every_tab_key(gpudeck_home: Path) -> None:
    recording = Recording.load(DEMO)
    app = GpuDeckApp(
        hosts=recording.hosts,
        transport=lambda host: recording.transport(host, speed=0),
        store=None,
        replay=str(DEMO),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, DeckScreen), "the deck")
        deck = app.screen
        assert "show_cloud" not in {b.binding.id for b in deck.active_bindings.values() if b.enabled}
        for key, tab in (("3", "fleet"), ("2", "jobs"), ("3", "jobs"), ("1", "fleet")):
            await pilot.press(key)
            await pilot.pause()
            assert app.is_running and deck.query_one("#tabs").active == tab  # type: ignore[attr-defined]
    assert not app.return_code


class Crashing(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("about to fail")

    def on_mount(self) -> None:
        self.set_timer(0.01, self.boom)

    def boom(self) -> None:
        raise ValueError("No Tab with id\n'--content-tab-cloud'")


class CrashingDeck(GpuDeckApp, Crashing):  # gpudeck's exception path, a crash of Crashing's
    CSS_PATH = str(Path(tui.app.__file__).parent / GpuDeckApp.CSS_PATH)


def test_an_unhandled_exception_exits_1_with_one_line(
    gpudeck_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from tui.app import run_app  # (new with the fix: imported here so the other test runs without it)

    app = CrashingDeck(hosts=[], store=None)
    assert run_app(app, headless=True) == 1
    err = capfd.readouterr().err.strip()
    assert err == (
        "gpudeck: the TUI stopped on an unexpected error: ValueError: No Tab with id '--content-tab-cloud'"
    )  # one line (the message's newline folded), no traceback
