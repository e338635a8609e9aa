"""The TUI's new-job form runs a job in a container (issue 28): its image field reaches the spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.containers import BB_IMAGE, containers_named
from tests.support.tui import named, sync, until
from tests.support.waiting import wait_for
from tui.actions.options import form_options
from tui.app import GpuDeckApp
from tui.errors import GpudeckError
from tui.screens.launch import LaunchScreen


def test_the_forms_image_is_checked_like_the_flag() -> None:
    assert form_options("local", "python t.py", image=" localhost/bb:test ").image == "localhost/bb:test"
    assert form_options("local", "python t.py").image is None
    with pytest.raises(GpudeckError, match="--image: expected an image reference"):
        form_options("local", "python t.py", image="-v /:/x")


@pytest.mark.slow
@sync
async def test_a_job_launched_from_the_form_with_an_image_runs_in_it(
    podman_images: dict[str, str], gpudeck_home: Path
) -> None:
    app = GpuDeckApp()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.fleet.hosts.get("local") and app.fleet.hosts["local"].up, "local up")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, LaunchScreen), "the form")
        app.screen.query_one("#command").value = "sh -c 'echo in-container=$GPUDECK_NODE; sleep 60'"
        app.screen.query_one("#name").value = "tui-image"
        app.screen.query_one("#image").value = BB_IMAGE
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any(j.state == "running" for j in named(app, "tui-image")), "running")
        job = named(app, "tui-image")[0]
        wait_for(lambda: containers_named(f"gpudeck-{job.id}-0"), timeout=60, what="its container")
    app.exit()
