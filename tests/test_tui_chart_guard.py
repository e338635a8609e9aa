"""A chart plotext cannot build is one dim line, never an exception that ends the TUI: plotext's
legend indexes past a labelled line it clipped away (seen in a full run: a memory sample newer than
every utilization sample, outside the x axis the GPU chart set)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tests.support.tui import sync
from tui.widgets.charts import UsageChart


class OneChart(App[None]):
    def compose(self) -> ComposeResult:
        yield UsageChart(id="chart")


@sync
async def test_a_line_outside_the_axis_is_said_not_raised() -> None:
    app = OneChart()
    async with app.run_test(size=(60, 15)) as pilot:
        chart = app.query_one(UsageChart)
        chart.plt.plot([1, 2, 3], [10, 20, 30], label="util", marker="braille")
        chart.plt.plot([10], [50], label="mem", marker="braille")  # past the axis below
        chart.plt.xlim(0, 5)
        chart.refresh()
        await pilot.pause()
        assert "chart not drawn" in str(chart.render())
        assert app.is_running  # the app goes on
