"""config.toml's [keys] remaps bindings by id (Textual's keymap); an unknown id is one warning."""

from __future__ import annotations

from pathlib import Path

from tests.support.tui import sync
from tui.app import GpuDeckApp
from tui.settings import load


@sync
async def test_keys_remap_bindings_and_unknown_ids_are_said(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text('[keys]\nnew_job = "ctrl+o"\nmake_tea = "x"\n')
    app = GpuDeckApp(hosts=["local"], store=None, settings=load(gpudeck_home / "config.toml"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        keys = {active.binding.id: key for key, active in app.screen.active_bindings.items()}
        assert keys.get("new_job") == "ctrl+o"
        assert any("[keys] make_tea: no such key binding" in str(n.message) for n in app._notifications)
        await pilot.press("ctrl+o")
        await pilot.pause(0.2)
        assert type(app.screen).__name__ == "LaunchScreen"
