"""Issue 36: the Cloud tab is drawn only when shown. Its clock ticked it every second behind the
fleet and jobs tabs, each time laying out the screen; it catches up when it is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.messages import FleetChanged
from tui.widgets.cloud_view import CloudView


@sync
async def test_the_hidden_cloud_tab_is_not_drawn_and_catches_up_when_shown(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[int] = []
    real_show = CloudView.show

    def show(self: CloudView, *args: Any) -> None:
        drawn.append(1)
        real_show(self, *args)

    monkeypatch.setattr(CloudView, "show", show)
    app = GpuDeckApp(hosts=["local"], store=None)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        drawn.clear()
        for _ in range(3):
            app.post_message(FleetChanged(frozenset({"clock", "cloud"})))
            await pilot.pause()
        assert not drawn  # behind the jobs tab: nothing drawn
        await pilot.press("3")
        await until(pilot, lambda: bool(drawn), "the Cloud tab drawn once shown")
        drawn.clear()
        app.post_message(FleetChanged(frozenset({"clock"})))
        await until(pilot, lambda: bool(drawn), "the shown Cloud tab follows its clock")
