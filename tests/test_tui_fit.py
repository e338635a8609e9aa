"""Issue 36, findings 8 and 11: the screens fit the terminal and the demo shows what gpudeck is for.
Driven on the GPU fleet of docs/gpu_fleet.py through the replay (as `gpudeck --replay` plays it):
at 80×24 one line per GPU and a readable command column in the process view; a GPU-less host's
CPU sparkline within 220 columns; a multi-node job's host column that shows `×N`; the job view's
throughput, cost and GPU chart (one aggregate with its spread, whatever the GPU count, on the job's
own time span); an ended job's full log that does not say "following"."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Label

from tests.support.tui import redrawn, sync, until
from tests.test_tui_snapshots import Replayed
from tests.test_tui_wide_snapshots import GpuFleet
from tui.fleet import Fleet
from tui.remote.replay import Recording
from tui.screens.job import JobScreen
from tui.screens.logs import LogScreen
from tui.screens.procs import ProcessesScreen
from tui.widgets.charts import UsageChart
from tui.widgets.gpu_strip import GpuStrip
from tui.widgets.host_panel import HostPanel, host_lines
from tui.widgets.job_stats import render_stats
from tui.widgets.jobs_table import JobsTable
from tui.widgets.output_log import OutputLog

RECORDING = Path(__file__).resolve().parent.parent / "docs" / "gpu-fleet.jsonl"
SFT = "20261202-031214-7f3a9c"  # two nodes (h100-a, h100-b), 16 GPUs


@sync
async def test_at_80x24_each_gpu_is_one_line_and_the_command_column_is_readable(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = GpuFleet(monkeypatch)
    app = fleet.app
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, fleet.settled, "the replay to settle")
        await redrawn(pilot, app)
        panel = app.screen.query(HostPanel).first()
        await until(pilot, lambda: panel.size.height == 9, f"h100-a in 9 lines, not {panel.size.height}")
        host = app.fleet.hosts[panel.host_name]
        lines = host_lines(host, app.fleet, 0.0, panel.size.width)
        assert len(lines) == 1 + 8 and all(line.cell_length <= panel.size.width for line in lines)
        assert "W" in lines[1].plain and "llama3-8b-sft" in lines[1].plain  # power and the job stay

        await app.push_screen(ProcessesScreen(app.fleet, app.connections, app.job_control, job_id=SFT))
        grid = app.screen.query_one(DataTable)
        await until(pilot, lambda: grid.row_count > 0, "the processes")
        await pilot.pause(0.2)
        columns = list(grid.columns.values())
        assert str(columns[-1].label) == "command"
        before = sum(c.get_render_width(grid) for c in columns[:-1])
        assert grid.scrollable_content_region.width - before >= 20  # was 3 characters


@pytest.mark.slow
@sync
async def test_the_job_view_shows_throughput_cost_and_a_gpu_chart_that_reads_at_16_gpus(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = GpuFleet(monkeypatch)
    app = fleet.app
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, fleet.settled, "the replay to settle")
        await pilot.press("2")
        table = app.screen.query_one(JobsTable)
        await until(pilot, lambda: table.row_count == 2, "both rows")
        hosts = table.get_cell(SFT, "hosts")
        assert str(hosts) == "h100-a ×2"  # was cut to "h100-a,h10"
        job = app.fleet.jobs[SFT]
        await until(pilot, lambda: app.fleet.costs.jobs.get(SFT) is not None, "the cost board")
        await until(
            pilot, lambda: (app.fleet.costs.jobs[SFT].burn or 0) > 0, "a burn from the recorded price"
        )
        costs = app.fleet.costs.jobs[SFT]
        assert costs.burn == pytest.approx(2 * 98.32) and (costs.accrued or 0) > 0 and costs.projected
        stats = render_stats(job, app.fleet, 0.0).plain
        assert "— steps/s" not in stats and "— samples/s" not in stats and "cost so far $" in stats
        assert job.samples_per_sec == pytest.approx(job.last["samples_per_s"])  # the recording's spelling

        await app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, SFT))
        chart = app.screen.query_one(UsageChart)
        await until(pilot, lambda: chart.plt._active.monitor.label, "the GPU chart")
        monitor = chart.plt._active.monitor
        assert len(job.gpu_util) == 16
        assert sorted(monitor.label) == ["max", "mem mean", "min", "util mean"]  # not a pair per GPU
        assert monitor.xlim[0][0] == 0 and min(min(xs) for xs in monitor.x) >= 0  # from the job's start
        assert app.screen.query_one(OutputLog).host == "h100-a"  # rank 0's node: the one that prints steps
        strip = app.screen.query_one(GpuStrip)
        await until(pilot, lambda: strip.display and "h100-b" in str(strip.render()), "the per-GPU strip")
        rows = str(strip.render()).splitlines()
        assert [r.split()[0] for r in rows] == ["h100-a", "h100-b"]  # one row per host, each GPU in it
        assert all(len(r.split()) == 1 + 2 * 8 for r in rows), rows


def test_recorded_prices_are_the_hosts_prices_in_a_replay() -> None:
    recording = Recording.load(RECORDING)
    assert recording.host_settings("h100-a") == {"price_per_hour": 98.32, "currency": "USD"}
    assert recording.host_settings("h100-spot")["price_per_hour"] == 39.8
    assert recording.host_settings("nowhere") == {}


def test_a_gpu_less_host_fits_220_columns() -> None:
    fleet = Fleet(clock=lambda: 100.0)
    fleet.apply_hello("laptop", {"hostname": "laptop", "cpu_count": 8, "gpu": {"available": False}})
    for t in range(300):
        fleet.apply_gpus(
            "laptop",
            {"available": False, "reason": "no NVIDIA GPU", "gpus": [], "cpu": 20.0 + t % 50},
            t=float(t),
        )
    host = fleet.hosts["laptop"]
    for width in (216, 76):
        lines = host_lines(host, fleet, 100.0, width, wide=width > 200)
        assert lines and all(line.cell_length <= width for line in lines), [x.cell_length for x in lines]


@sync
async def test_an_ended_jobs_full_log_says_ended_not_following(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed = Replayed(monkeypatch)  # tests/data/recordings/session.jsonl: two jobs, both ended
    app = replayed.app
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, replayed.settled, "the replay to settle")
        job = next(j for j in app.fleet.jobs.values() if j.name == "resnet-demo")
        assert not job.active
        await app.push_screen(LogScreen(app.fleet, app.connections, job.id))
        title = app.screen.query_one("#log-title", Label)
        await until(pilot, lambda: "lines" in str(title.render()), "the log indexed")
        text = str(title.render())
        assert f"ended ({job.state})" in text and "following" not in text
