"""The Cloud tab (`3`) driven with Pilot against the local Aliyun endpoint (tests/support/aliyun.py,
real SDK over real HTTP): the instances with the idle one highlighted and its waste, `s` + the
confirmation stopping it on the server, read-only refusing, a failing provider shown as one line,
and the snapshot running on a worker thread while the app keeps answering keys."""

from __future__ import annotations

import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Input, Label, Select, Static
from textual.widgets._footer import FooterKey

from tests.support.aliyun import AliyunServer, serving
from tests.support.cloud_demo import SHOT_SIZE, fill
from tests.support.sshd import SshHome
from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.cloud import fleet as cloud_fleet
from tui.fleet import Fleet
from tui.fleet.host_util import util_points
from tui.hosts_file import HostEntry, add_host, set_host_fields
from tui.screens.cloud_launch import CloudLaunchScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.hostkey import HostKeyScreen
from tui.settings import CloudSettings, Settings, SettingsError, load
from tui.widgets.cloud_view import CloudView, price_by


@pytest.fixture
def aliyun(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def minutes(now: float, count: int, value: float) -> list[tuple[float, float]]:
    return [(now - 60 * k, value) for k in range(count)]


def account_with_three(aliyun: AliyunServer, now: float | None = None) -> dict[str, str]:
    """An idle instance (2 % for 40 min), a busy one, and one without a GPU metric."""
    now, acc = time.time() if now is None else now, aliyun.account
    ids = {
        "idle": acc.add(name="forgotten-[b]box"),
        "busy": acc.add(name="training"),
        "nodata": acc.add(name="nodata"),
    }
    acc.metrics[ids["idle"]] = minutes(now, 40, 2.0)
    acc.metrics[ids["busy"]] = minutes(now, 40, 93.0)
    return ids


def app_for(
    read_only: bool = False, cloud: CloudSettings | None = None, clock: Callable[[], float] | None = None
) -> GpuDeckApp:
    return GpuDeckApp(
        hosts=[],
        store=None,
        settings=Settings(cloud=cloud or CloudSettings()),
        read_only=read_only,
        clock=clock,
    )


def cell(app: GpuDeckApp, row: str, column: str) -> str:
    value = app.screen.query_one("#cloud-table", DataTable).get_cell(row, column)
    return value.plain if isinstance(value, Content) else str(value)


def text_of(app: GpuDeckApp, selector: str) -> str:
    content = app.screen.query_one(selector, Static).visual
    return content.plain if isinstance(content, Content) else str(content)


async def open_tab(pilot: Pilot, app: GpuDeckApp, rows: int) -> None:
    await pilot.press("3")
    table = app.screen.query_one("#cloud-table", DataTable)
    await until(pilot, lambda: table.row_count == rows, f"{rows} instance rows")


async def select(pilot: Pilot, app: GpuDeckApp, instance_id: str) -> None:
    table = app.screen.query_one("#cloud-table", DataTable)
    table.move_cursor(row=table.get_row_index(instance_id))
    await pilot.pause()
    view = app.screen.query_one(CloudView).selected
    assert view is not None and view.instance.id == instance_id


def notes(app: GpuDeckApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


@sync
async def test_the_tab_lists_instances_and_highlights_the_idle_one(aliyun: AliyunServer) -> None:
    now = time.time()  # the app's clock stops there: the idle cell is exact however late it is drawn
    ids = account_with_three(aliyun, now)
    app = app_for(clock=lambda: now)
    async with app.run_test(size=(200, 30)) as pilot:
        await open_tab(pilot, app, 3)
        assert cell(app, ids["idle"], "idle") == "39m00s · CNY 10.80/h"
        assert cell(app, ids["busy"], "idle") == "" and cell(app, ids["nodata"], "idle") == ""
        assert cell(app, ids["busy"], "util").endswith(" 93%") and cell(app, ids["busy"], "avg") == "93%"
        assert cell(app, ids["nodata"], "util") == "no GPU metric"  # never 0 %
        assert cell(app, ids["idle"], "name") == "forgotten-[b]box"  # the provider's text, not markup
        assert (
            cell(app, ids["idle"], "price") == "CNY 10.80/h"
            and cell(app, ids["idle"], "source") == "provider"
        )
        status = text_of(app, "#cloud-status")
        assert re.search(r"updated \d+s ago, every 1m00s", status) and "3 instances" in status
        assert "1 idle, wasting CNY 10.80/h" in status
        await pilot.press("down")  # the table has the focus: the keys move its cursor
        assert app.screen.query_one(CloudView).selected.instance.id == ids["nodata"]  # type: ignore[union-attr]
        assert "GPU: no GPU metric (monitoring agent missing?)" in text_of(app, "#cloud-detail")
        assert "price: " in text_of(app, "#cloud-detail")


def footer_keys(app: GpuDeckApp) -> set[str]:
    return {k.key for k in app.screen.query(FooterKey) if k.display}


@pytest.mark.slow
@sync
async def test_the_footer_shows_the_cloud_tabs_keys_and_no_job_keys(aliyun: AliyunServer) -> None:
    account_with_three(aliyun)
    app = app_for()
    async with app.run_test(size=(200, 30)) as pilot:
        await until(pilot, lambda: {"n", "1", "2", "3"} <= footer_keys(app), "the fleet tab's keys")
        await open_tab(pilot, app, 3)
        cloud = {"s", "S", "l", "r", "1", "2", "3", "q"}
        await until(pilot, lambda: cloud <= footer_keys(app), "the cloud keys")
        assert not footer_keys(app) & {"n", "K", "p", "plus", "minus", "enter", "y", "d"}, footer_keys(app)
        await pilot.press("1")  # and back: the fleet's `n` again
        await until(
            pilot, lambda: "n" in footer_keys(app) and "S" not in footer_keys(app), "the fleet tab's keys"
        )


@sync
async def test_the_stop_question_says_what_the_gpus_do_and_wraps_its_text(aliyun: AliyunServer) -> None:
    """Issue 32, item 6: the dialog had no utilization and cut its text at the dialog's edge."""
    now = time.time()
    ids = account_with_three(aliyun, now)
    app = app_for(clock=lambda: now)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_tab(pilot, app, 3)
        await select(pilot, app, ids["idle"])
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert "GPU now 2%, 1 h average 2% (the busiest GPU), idle for 39m00s" in dialog.detail
        label = dialog.query_one(".dialog-detail", Label)
        await pilot.pause()
        assert label.size.width * label.size.height >= len(dialog.detail)  # all of it shown, wrapped
        await pilot.press("n")


@pytest.mark.slow
@sync
async def test_s_asks_naming_the_instance_and_price_then_stops_it_on_the_server_and_S_starts_it(
    aliyun: AliyunServer,
) -> None:
    ids = account_with_three(aliyun)
    app = app_for()
    async with app.run_test(size=(200, 30)) as pilot:
        await open_tab(pilot, app, 3)
        await select(pilot, app, ids["idle"])
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert dialog.question == f"Stop forgotten-[b]box ({ids['idle']})?" and "CNY 10.80/h" in dialog.detail
        await pilot.press("n")  # no: nothing happens
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "the dialog gone")
        assert aliyun.account.status(ids["idle"]) == "Running"
        await pilot.press("s")
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the armed dialog"
        )
        await pilot.press("y")
        await until(pilot, lambda: aliyun.account.status(ids["idle"]) == "Stopped", "the instance stopped")
        assert aliyun.account.status(ids["busy"]) == "Running"
        await until(pilot, lambda: cell(app, ids["idle"], "state") == "stopped", "the refreshed row")
        stops = [c for c in aliyun.account.calls if c["Action"] == "StopInstance"]
        assert [c["InstanceId"] for c in stops] == [ids["idle"]]
        await pilot.press("S")  # and started again, after its own question
        await until(
            pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the start question"
        )
        assert app.screen.question.startswith("Start forgotten-[b]box")  # type: ignore[attr-defined]
        await pilot.press("y")
        await until(pilot, lambda: aliyun.account.status(ids["idle"]) in ("Starting", "Running"), "started")


@pytest.mark.slow  # the everyday subset stays under a minute serially
@sync
async def test_read_only_refuses_cloud_actions_without_a_dialog(aliyun: AliyunServer) -> None:
    ids = account_with_three(aliyun)
    app = app_for(read_only=True)
    async with app.run_test(size=(200, 30)) as pilot:
        await open_tab(pilot, app, 3)
        await select(pilot, app, ids["idle"])
        for key, what in (("s", "stop"), ("l", "launch")):
            await pilot.press(key)
            await until(
                pilot, lambda w=what: any(f"read-only: cloud {w} refused" in n for n in notes(app)), what
            )
            assert not isinstance(app.screen, ConfirmScreen | CloudLaunchScreen)
        app.cloud.act("stop", app.screen.query_one(CloudView).selected)  # type: ignore[arg-type]  # the service refuses too
        await pilot.pause(0.3)
        assert aliyun.account.status(ids["idle"]) == "Running"
        assert not any(c["Action"] == "StopInstance" for c in aliyun.account.calls)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow  # boto3's first import in the worker: ~1 s
@sync
async def test_a_failing_provider_is_one_line_and_the_others_are_shown(
    aliyun: AliyunServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = account_with_three(aliyun)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    cloud = CloudSettings(
        aws_regions=("us-east-1",),
        aliyun_regions=("cn-hangzhou",),
        aws_endpoint_url=f"http://127.0.0.1:{closed_port()}",
    )  # nothing listens: refused
    app = app_for(cloud=cloud)
    async with app.run_test(size=(200, 30)) as pilot:
        await open_tab(pilot, app, 3)
        errors = text_of(app, "#cloud-errors").splitlines()
        assert len(errors) == 1 and errors[0].startswith(
            "aws us-east-1 describe_instances: Could not connect"
        )
        assert app.screen.query_one("#cloud-errors").display
        assert set(ids.values()) == {
            str(k.value) for k in app.screen.query_one("#cloud-table", DataTable).rows
        }


@pytest.mark.slow
@sync
async def test_the_snapshot_runs_on_a_worker_while_keys_still_work(
    aliyun: AliyunServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    account_with_three(aliyun)
    gate, threads = threading.Event(), []
    real = cloud_fleet.snapshot

    def held(*args: Any, **kwargs: Any) -> Any:  # the real snapshot, after the test lets it go
        threads.append(threading.current_thread())
        gate.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(cloud_fleet, "snapshot", held)
    app = app_for()
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: bool(threads), "the snapshot started")
        assert threads[0] is not threading.main_thread()
        assert "looking at your cloud accounts" in text_of(app, "#cloud-status")
        from textual.widgets import TabbedContent

        tabs = app.screen.query_one(TabbedContent)
        await pilot.press("1")  # the event loop answers while the providers are asked
        assert tabs.active == "fleet" and app.cloud.refreshing
        await pilot.press("3")
        gate.set()
        await until(pilot, lambda: app.screen.query_one("#cloud-table", DataTable).row_count == 3, "the rows")
        assert tabs.active == "cloud"


def test_refresh_interval_is_a_setting(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[cloud]\nrefresh = 120\n")
    assert load(path).cloud.refresh == 120.0 and Settings().cloud.refresh == 60.0
    path.write_text("[cloud]\nrefresh = 'often'\n")
    with pytest.raises(SettingsError, match=r"config.toml:2: \[cloud\] refresh: expected a number > 0"):
        load(path)


def test_host_util_is_the_busiest_gpu_per_second_in_the_window() -> None:
    fleet = Fleet(clock=lambda: 1000.0)
    for t, utils in ((100.2, (10.0, 30.0)), (101.0, (50.0, 70.0)), (500.0, (1.0, 1.0))):
        fleet.apply_gpus("gpu1", {"gpus": [{"index": i, "util": u} for i, u in enumerate(utils)]}, t=t)
    fleet.apply_gpus("gpu1", {"gpus": [{"index": 0, "util": "nan"}, {"index": 1, "util": 8.0}]}, t=600.0)
    # any busy GPU makes the host busy: the busiest one, not the mean (10 and 30 % → 30, not 20)
    assert util_points(fleet.hosts["gpu1"], 100.0, 600.0) == [
        (100.0, 30.0),
        (101.0, 70.0),
        (500.0, 1.0),
        (600.0, 8.0),
    ]
    assert util_points(fleet.hosts["gpu1"], 101.0, 499.0) == [(101.0, 70.0)]


@pytest.mark.slow
@sync
async def test_a_gpudeck_host_is_judged_on_the_tuis_own_gpu_samples(aliyun: AliyunServer) -> None:
    """The instance has no provider metric; as gpudeck host `gpu1` the TUI's 1 Hz samples (1 and 2 %, the
    last 40 minutes) make it idle, with their source named."""
    iid = aliyun.account.add(name="gpu1")
    add_host(HostEntry(name="gpu1", target="root@127.0.0.1:22"))
    set_host_fields("gpu1", {"provider": "aliyun", "instance_id": iid})
    app = app_for()
    now = time.time()
    for t in range(int(now) - 2400, int(now) + 1):
        app.fleet.apply_gpus(
            "gpu1", {"gpus": [{"index": 0, "util": 1.0}, {"index": 1, "util": 2.0}]}, t=float(t)
        )
    async with app.run_test(size=(200, 30)) as pilot:
        await open_tab(pilot, app, 1)
        assert cell(app, iid, "host") == "gpu1" and cell(app, iid, "util").endswith(" 2%")
        # host_util is asked for the judged window (30 min) only: idle since its start
        assert re.fullmatch(r"(29|30)m\d\ds · CNY 10.80/h", cell(app, iid, "idle"))
        assert "GPU: gpudeck agent on gpu1" in text_of(app, "#cloud-detail")


@pytest.mark.slow
@sync
async def test_l_launches_an_instance_that_becomes_a_host_after_the_key_dialog(
    ssh_home: SshHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider gives the new instance 127.0.0.1 (the test sshd); nobody published its key, so the
    host-key dialog asks (never silent); accepted, the host is in hosts.toml and the app connects."""
    with serving(monkeypatch) as aliyun:
        app = app_for()
        async with app.run_test(size=(200, 40)) as pilot:
            await open_tab(pilot, app, 0)
            await pilot.press("l")
            await until(pilot, lambda: isinstance(app.screen, CloudLaunchScreen), "the launch form")
            form = app.screen
            form.query_one("#provider", Select).value = "aliyun"
            form.query_one("#type", Input).value = "ecs.gn7i-c8g1.2xlarge"
            form.query_one("#name", Input).value = "gpu-new"
            form.query_one("#image", Input).value = "ubuntu_22_04_x64"
            form.query_one("#ssh_user", Input).value = "root"
            form.query_one("#ssh_port", Input).value = str(ssh_home.server.port)
            await pilot.press("ctrl+s")
            # Its buttons too: the screen is current a moment before it has composed them (a loaded CI).
            await until(
                pilot,
                lambda: isinstance(app.screen, HostKeyScreen) and bool(app.screen.query("#accept")),
                f"the host key dialog ({notes(app)})",
                timeout=60,
            )
            (iid,) = aliyun.account.instances
            assert iid in app.screen.host  # asked under its HostKeyAlias: the instance id
            run = [c for c in aliyun.account.calls if c["Action"] == "RunInstances"]
            assert len(run) == 1 and run[0]["Tag.1.Key"] == "gpudeck-managed" and run[0]["ClientToken"]
            app.screen.query_one("#accept", Button).press()  # the user's yes
            await until(pilot, lambda: not isinstance(app.screen, HostKeyScreen), "the dialog answered")
            await until(
                pilot,
                lambda: "gpu-new" in app.fleet.hosts and app.fleet.hosts["gpu-new"].up,
                f"the new host connected ({notes(app)}, {app.fleet.hosts.get('gpu-new')}, {app.screen})",
                timeout=60,
            )
            hosts = (ssh_home.gpudeck_home / "hosts.toml").read_text()
            assert f'instance_id = "{iid}"' in hosts and f'host_key_alias = "{iid}"' in hosts
            assert iid in (ssh_home.gpudeck_home / "known_hosts").read_text()


SHOT_NOW = 1_796_000_000.0  # the stopped clock of the picture


def stopped_clock(monkeypatch: pytest.MonkeyPatch, now: float) -> None:
    """`time.time()` stopped for tui's modules (monotonic runs on: Textual's timers)."""
    from tests.test_tui_snapshots import _FixedTime

    fixed = _FixedTime(now)
    for name, module in list(sys.modules.items()):
        if name.startswith("tui.") and getattr(module, "time", None) is time:
            monkeypatch.setattr(module, "time", fixed)


@pytest.mark.slow
def test_cloud_tab_snapshot(snap_compare: Any, aliyun: AliyunServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The picture in the README (docs/screenshots.py makes it the same way)."""
    fill(aliyun.account, SHOT_NOW)
    stopped_clock(monkeypatch, SHOT_NOW)
    app = GpuDeckApp(hosts=[], store=None, settings=Settings(), clock=lambda: SHOT_NOW)

    async def run_before(pilot: Pilot) -> None:
        await open_tab(pilot, app, 4)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SHOT_SIZE, run_before=run_before)


def test_price_by_names_the_source_in_a_word() -> None:
    assert price_by("catalog us-east-1 on-demand (2025-06)") == "catalog"
    assert price_by("aws describe_spot_price_history us-east-1a Linux/UNIX") == "spot"
    assert price_by("aliyun DescribeSpotPriceHistory cn-hangzhou-h") == "spot"
    assert price_by("aliyun DescribePrice cn-hangzhou pay-as-you-go") == "provider"
    assert price_by("unknown: not in the catalog") == "unknown"


@pytest.mark.slow
@sync
async def test_a_second_action_on_an_instance_waits_for_the_first(aliyun: AliyunServer) -> None:
    ids = account_with_three(aliyun)
    aliyun.account.faults.append(("StopInstance", "stall"))  # the first stop answers after 2 s
    app = app_for()
    async with app.run_test(size=(200, 30)) as pilot:
        await open_tab(pilot, app, 3)
        await select(pilot, app, ids["idle"])
        view = app.screen.query_one(CloudView).selected
        assert view is not None
        app.cloud.act("stop", view)
        app.cloud.act("stop", view)  # while the first is under way
        await until(
            pilot, lambda: any("an action is already under way" in n for n in notes(app)), "the refusal"
        )
        await until(pilot, lambda: not app.cloud.busy, "the first stop done")
        assert len([c for c in aliyun.account.calls if c["Action"] == "StopInstance"]) == 1
