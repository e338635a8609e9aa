"""Themes as data and the persisted choice: shipped files load with gpudeck's variables, `t`
cycles and writes config.toml keeping the user's comments, a bad file is a notice, not a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tui import config, settings
from tui.app import GpuDeckApp
from tui.screens.deck import DeckScreen
from tui.themes import APP_VARIABLES, BUILTIN_DIR, ThemeError, load_theme, load_themes

USER_CONFIG = """\
# my gpudeck settings
[ssh]
alive_timeout = 20  # a slow link

[ui]
theme = "gpudeck-dark"  # the one I like
"""


def test_shipped_themes_have_every_app_variable() -> None:
    themes = load_themes([BUILTIN_DIR])
    assert themes.errors == []
    assert {"gpudeck-dark", "gpudeck-light", "gpudeck-high-contrast"} <= set(themes.names)
    for theme in themes.themes:
        assert set(APP_VARIABLES) <= set(theme.variables), theme.name
        assert theme.warning, theme.name


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("dark = true\n[colors]\nprimary = '#112233'\n", "needs a `name`"),
        ("name = 'x'\n[colors]\nprimary = 'not-a-colour'\n", "is not a colour"),
        ("name = 'x'\n[colors]\nprimary = '#112233'\nsparkle = '#ffffff'\n", "unknown colour"),
        ("name = 'x'\n[colors\n", "x.toml"),
    ],
)
def test_bad_theme_files_are_refused_with_a_reason(tmp_path: Path, body: str, problem: str) -> None:
    path = tmp_path / "x.toml"
    path.write_text(body)
    with pytest.raises(ThemeError, match="x.toml") as err:
        load_theme(path)
    assert problem in str(err.value)


def test_save_theme_keeps_comments_and_refuses_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USER_CONFIG)
    config.save_theme("gpudeck-light", path)
    text = path.read_text()
    assert 'theme = "gpudeck-light"' in text and "# my gpudeck settings" in text and "# a slow link" in text
    assert settings.load(path).ui.theme == "gpudeck-light"
    new = tmp_path / "new" / "config.toml"
    config.save_theme("gpudeck-dark", new)
    assert settings.load(new).ui.theme == "gpudeck-dark"
    path.write_text("[ui\ntheme = ")
    with pytest.raises(config.ConfigError):
        config.save_theme("gpudeck-dark", path)
    assert path.read_text() == "[ui\ntheme = "  # never overwritten


async def _cycle(home: Path) -> tuple[str, str]:
    app = GpuDeckApp()
    async with app.run_test(size=(100, 30)) as pilot:
        before = app.theme
        await pilot.press("t")
        after = app.theme
        for _ in range(200):
            if f'theme = "{after}"' in (home / "config.toml").read_text():
                break
            await pilot.pause(0.05)
    return before, after


@pytest.mark.slow
def test_theme_cycling_persists_to_config(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text(USER_CONFIG)
    before, after = asyncio.run(_cycle(gpudeck_home))
    assert before == "gpudeck-dark" and after != before
    text = (gpudeck_home / "config.toml").read_text()
    assert (
        f'theme = "{after}"' in text
        and "# the one I like" in text
        and "alive_timeout = 20  # a slow link" in text
    )
    assert GpuDeckApp().theme == after  # the next start opens with it


async def _start_with_user_themes() -> tuple[list[str], list[str], bool]:
    app = GpuDeckApp()
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            if any("bad.toml" in n.message for n in app._notifications):
                break
            await pilot.pause(0.05)
        messages = [n.message for n in app._notifications]
        return messages, list(app.deck_themes), isinstance(app.screen, DeckScreen)


def test_user_theme_dir_is_read_and_a_bad_file_is_a_notification(gpudeck_home: Path) -> None:
    themes = gpudeck_home / "themes"
    themes.mkdir()
    (themes / "bad.toml").write_text("name = 'bad'\n[colors]\nprimary = 'chartreuse-ish'\n")
    (themes / "mine.toml").write_text((BUILTIN_DIR / "dark.toml").read_text().replace("gpudeck-dark", "mine"))
    messages, names, on_deck = asyncio.run(_start_with_user_themes())
    assert any("bad.toml" in m and "not a colour" in m for m in messages), messages
    assert "mine" in names and "bad" not in names
    assert on_deck
