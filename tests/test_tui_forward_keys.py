"""`F` and `!` on a job (issue 35): `F` asks a port and forwards it, its URL in a toast and in the job
view until `F` then `x` closes it; `!` suspends the app for `gpudeck ssh JOB --node 0`. And the
forwards' service itself carries a page from a job's HTTP server on the sshd host."""

from __future__ import annotations

import contextlib
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Label, Static

from tests.conftest import gpudeck
from tests.support.cleanup import kill_all_jobs
from tests.support.jobs import launch, wait_state
from tests.support.sshd import SshHome, free_port
from tests.support.tui import open_a_job, sync, until
from tests.support.waiting import wait_for
from tui.app import GpuDeckApp
from tui.remote.client import AgentClient
from tui.screens import job_ports
from tui.screens.forward_port import ForwardPortScreen
from tui.screens.job import JobScreen
from tui.services.forwards import PortForwards


def forwards_line(app: GpuDeckApp) -> str:
    line = app.screen.query_one("#forwards", Static)
    return str(line.render()) if line.display else ""


async def answer(pilot: Any, app: GpuDeckApp, text: str) -> None:
    await pilot.press("F")
    await until(pilot, lambda: isinstance(app.screen, ForwardPortScreen), "the port dialog")
    await pilot.pause()
    app.screen.query_one("#port", Input).value = text
    await pilot.press("enter")


@pytest.mark.slow  # the app with its agent: seconds
@sync
async def test_F_forwards_a_port_shown_until_closed(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job = launch(client, workdir, ["sleep", "60"], name="served")
    wait_state(client, job["id"], {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_a_job(pilot, app)
        await answer(pilot, app, "70000")  # no such port: said in the dialog, which stays
        error = app.screen.query_one("#port-error", Label)
        assert "expected PORT or PORT:LOCAL" in str(error.render())
        app.screen.query_one("#port", Input).value = "8080"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen) and forwards_line(app), "the URL shown")
        assert forwards_line(app) == "Forwarded: http://127.0.0.1:8080 → local:8080"  # a local job: as is
        assert any("http://127.0.0.1:8080" in str(n.message) for n in app._notifications)
        await answer(pilot, app, "x")
        await until(pilot, lambda: isinstance(app.screen, JobScreen) and not forwards_line(app), "closed")
    client.request("kill", job=job["id"])


@pytest.mark.slow  # the app with its agent: seconds
@sync
async def test_a_jobs_end_closes_its_forwards_with_a_toast(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    job = launch(client, workdir, ["sleep", "60"], name="ends-soon")
    wait_state(client, job["id"], {"running"})
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_a_job(pilot, app)
        await answer(pilot, app, "8080")
        await until(pilot, lambda: isinstance(app.screen, JobScreen) and forwards_line(app), "the URL shown")
        client.request("kill", job=job["id"])
        await until(
            pilot,
            lambda: any(
                "1 forward of ends-soon closed: it killed" in str(n.message) for n in app._notifications
            ),
            "the toast saying the forward closed with its job",
        )
        assert not forwards_line(app) and app.port_forwards.of_job(job["id"]) == []


@pytest.mark.slow  # the app with its agent: seconds
@sync
async def test_bang_runs_gpudeck_ssh_for_the_job_with_the_app_suspended(
    gpudeck_home: Path, client: AgentClient, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = launch(client, workdir, ["sleep", "60"], name="shelled")
    wait_state(client, job["id"], {"running"})
    ran: list[list[str]] = []
    suspended: list[bool] = []

    class Done:
        returncode = 0

    def run(argv: list[str]) -> Done:
        ran.append(argv)
        return Done()

    @contextlib.contextmanager
    def suspend() -> Iterator[None]:
        suspended.append(True)
        yield

    monkeypatch.setattr(job_ports.subprocess, "run", run)
    app = GpuDeckApp(store=None)
    monkeypatch.setattr(app, "suspend", suspend)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_a_job(pilot, app)
        await pilot.press("exclamation_mark")
        await until(pilot, lambda: ran, "the shell")
    assert ran == [[sys.executable, "-m", "tui", "ssh", job["id"], "--node", "0"]] and suspended == [True]
    client.request("kill", job=job["id"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_service_forwards_a_port_of_a_job_on_an_ssh_host(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n")
    ssh_home.trust()
    ssh_home.add_host()
    served = tmp_path / "site"
    served.mkdir()
    (served / "hello.txt").write_text("from the node")
    remote = free_port()
    server = f"exec {sys.executable} -m http.server {remote} --bind 127.0.0.1 --directory {served}"
    job = gpudeck("run", "--host", "box", "--", "sh", "-c", server, cwd=tmp_path).stdout.strip()
    forwards = PortForwards(None)
    try:
        port = forwards.open_port(job, "0", "box", remote, 0)
        assert port.url.startswith("http://127.0.0.1:") and not port.url.endswith(f":{remote}")

        def page() -> str:
            try:
                with urllib.request.urlopen(f"{port.url}/hello.txt", timeout=10) as r:
                    return r.read().decode()
            except OSError:
                return ""

        wait_for(lambda: page() == "from the node", timeout=60, what="the page through the forward")
        assert forwards.close_job(job) == 1 and forwards.of_job(job) == []
        assert page() == ""  # closed: nothing listens there any more
    finally:
        forwards.close_all()
        kill_all_jobs(ssh_home.agent_dir)
