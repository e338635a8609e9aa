"""The Footer fits its line (issue 36, finding 8): at 120 columns the jobs tab shows `/ o a 1 2 3`
and the job view `L e x` (compact labels, the least needed keys left out), at 80 columns `q ? t`
stay first, and while a filter is typed `q ? t` stay on show (greyed: the keys go to the field)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.remote.replay import Recording
from tui.screens.job import JobScreen

SESSION = Path(__file__).resolve().parents[1] / "docs" / "gpu-fleet.jsonl"


def on_show(app: GpuDeckApp) -> list[tuple[str, bool]]:
    """(key, enabled) of each footer key drawn wholly inside the terminal, left to right."""
    keys = [k for f in app.screen.query(Footer) for k in f.query(FooterKey) if k.display]
    inside = [k for k in keys if k.region.width and k.region.right <= app.size.width and k.region.x >= 0]
    return [(k.key_display or k.key, not k._disabled) for k in sorted(inside, key=lambda k: k.region.x)]


def shown(app: GpuDeckApp) -> list[str]:
    return [k for k, _ in on_show(app)]


async def _deck(pilot, app: GpuDeckApp) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: len(app.fleet.jobs) > 1, "the recorded jobs")


@sync
async def test_the_footer_fits_120_columns_on_the_jobs_tab_and_the_job_view() -> None:
    rec = Recording.load(SESSION)
    app = GpuDeckApp(hosts=rec.hosts, transport=lambda h: rec.transport(h, speed=0), store=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await _deck(pilot, app)
        await pilot.press("2")
        await until(pilot, lambda: {"/", "o", "a", "1", "2", "3"} <= set(shown(app)), "/ o a 1 2 3 on show")
        assert shown(app)[:3] == ["q", "?", "t"]
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        await until(pilot, lambda: {"L", "e", "x", "esc"} <= set(shown(app)), "L e x on show")
        assert shown(app)[:3] == ["q", "?", "t"]


@sync
async def test_q_help_and_theme_stay_first_at_80_columns_and_while_a_filter_is_typed() -> None:
    rec = Recording.load(SESSION)
    app = GpuDeckApp(hosts=rec.hosts, transport=lambda h: rec.transport(h, speed=0), store=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _deck(pilot, app)
        await pilot.press("2")
        await until(pilot, lambda: {"1", "2", "3", "/"} <= set(shown(app)), "the tab keys at 80 columns")
        assert shown(app)[:3] == ["q", "?", "t"]
        await pilot.press("/", "r", "e")
        await until(pilot, lambda: "esc" in shown(app), "the filter's keys")
        assert on_show(app)[:3] == [("q", False), ("?", False), ("t", False)]  # there, greyed
        assert app.is_running  # the q went into the filter
        await pilot.press("enter")
        await until(pilot, lambda: on_show(app)[:3] == [("q", True), ("?", True), ("t", True)], "back on")
