"""config.toml's [keys] remaps bindings by id (Textual's keymap); an unknown id is one warning."""

from __future__ import annotations

from pathlib import Path

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.settings import load


@sync
async def test_keys_remap_bindings_and_unknown_ids_are_said(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text('[keys]\nnew_job = "ctrl+o"\nmake_tea = "x"\n')
    app = GpuDeckApp(hosts=["local"], store=None, settings=load(gpudeck_home / "config.toml"))
    said: list[
        str
    ] = []  # every notification, kept: a toast expires, on a loaded machine before it is looked at
    real_notify = app.notify
    app.notify = lambda message, *a, **kw: (said.append(str(message)), real_notify(message, *a, **kw))[1]  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:

        def keys() -> dict[str | None, str]:
            return {active.binding.id: key for key, active in app.screen.active_bindings.items()}

        await until(pilot, lambda: keys().get("new_job") == "ctrl+o", "new_job on ctrl+o")
        await until(
            pilot,
            lambda: any("[keys] make_tea: no such key binding" in m for m in said),
            "the warning for make_tea",
        )
        await pilot.press("ctrl+o")
        await until(pilot, lambda: type(app.screen).__name__ == "LaunchScreen", "the launch form")
