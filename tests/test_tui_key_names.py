"""config.toml's [keys] as Textual names keys (issue 36, finding 9): `help = "F1"` fires on F1, and a
remapped key keeps its place in the Footer instead of falling off its end."""

from __future__ import annotations

from pathlib import Path

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.key_names import normalize_keys
from tui.screens.help import HelpScreen
from tui.settings import SettingsError, load


def test_key_names_are_textuals() -> None:
    assert normalize_keys("F1") == "f1"
    assert normalize_keys("?") == "question_mark"
    assert normalize_keys("ctrl+o, n") == "ctrl+o,n"
    assert normalize_keys("Esc") == "escape"
    assert normalize_keys("K") == "K"  # shift+k stays as Textual names it
    assert normalize_keys("Ctrl+K") == "ctrl+shift+k"


def test_a_typo_in_a_modifier_is_one_line(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text('[keys]\nhelp = "ctl+h"\n')
    try:
        load(gpudeck_home / "config.toml")
    except SettingsError as exc:
        assert "[keys] help" in str(exc) and "'ctl'" in str(exc)
    else:
        raise AssertionError("ctl+h was accepted")


@sync
async def test_help_on_F1_fires_and_the_remapped_key_keeps_its_place(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text('[keys]\nhelp = "F1"\nnew_job = "N"\n')
    app = GpuDeckApp(hosts=[], store=None, settings=load(gpudeck_home / "config.toml"))
    async with app.run_test(size=(160, 40)) as pilot:

        def ids() -> list[str | None]:
            return [a.binding.id for a in app.screen.active_bindings.values() if a.binding.show]

        await until(pilot, lambda: "new_job" in ids(), "the deck's keys")
        shown = ids()
        assert shown[:3] == ["quit", "help", "next_theme"]  # pinned first, F1 among them
        assert shown.index("new_job") < shown.index("show_fleet")  # in its declared place, not last
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help on F1")
