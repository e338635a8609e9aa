"""Issue 36 finding 3: muted text in the tables (`exited`, a stop's cause, the `id` column, the Cloud
tab's "stopped" and "no GPU metric") was drawn black on a dark table (contrast 1.0–1.44): Textual's
`$text-muted` is "auto 60%", which a DataTable cell resolved to #000000. Every text style the jobs and
Cloud tables use, drawn by a real DataTable in the app in each shipped theme, is measured here
(WCAG 2 contrast: at least 4.5 for text, 3 for muted text)."""

from __future__ import annotations

import re
from pathlib import Path

from rich.color import Color as RichColor
from textual.content import Content
from textual.geometry import Region
from textual.widgets import DataTable

from tests.support.tui import sync
from tui.app import GpuDeckApp
from tui.widgets import cloud_view, jobs_table

TABLES = (Path(jobs_table.__file__), Path(cloud_view.__file__))
STYLE = re.compile(r'"((?:bold |italic )*\$[a-z][a-z-]*(?: italic| bold)*)"')


def table_styles() -> list[str]:
    """Every style string the tables' modules give their cells, read from their source: a style
    added later is measured too; plain and bold text (job names, numbers) besides."""
    found = {m.group(1) for path in TABLES for m in STYLE.finditer(path.read_text())}
    assert {"$text-muted", "$success", "$error"} <= found  # the pattern still finds them
    return ["", "bold", *sorted(found)]


def luminance(color: RichColor) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = color.get_truecolor()
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: RichColor, b: RichColor) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@sync
async def test_every_table_text_style_reads_in_every_theme(gpudeck_home: Path) -> None:
    styles = table_styles()
    app = GpuDeckApp(hosts=[], store=None)
    low: list[str] = []
    async with app.run_test(size=(60, 2 * len(styles) + 4)) as pilot:
        table: DataTable[Content] = DataTable(cursor_type="none")
        await app.screen.mount(table)
        table.add_column("cell")
        for style in styles:
            table.add_row(Content.styled("exited 0123", style))
        assert sorted(app.deck_themes) == ["gpudeck-dark", "gpudeck-high-contrast", "gpudeck-light"]
        for theme in app.deck_themes:
            app.theme = theme
            await pilot.pause()
            lines = table.render_lines(Region(0, 0, table.size.width, len(styles) + 1))[1:]
            for style, strip in zip(styles, lines, strict=True):
                cell = next(s for s in strip if s.text.strip())
                fg, bg = cell.style.color, cell.style.bgcolor
                assert fg is not None and bg is not None
                need = 3.0 if "muted" in style else 4.5
                ratio = contrast(fg, bg)
                if ratio < need:
                    low.append(f"{theme} {style or 'plain'!r}: {ratio:.2f} < {need}")
    assert low == [], "\n".join(low)


def test_a_theme_without_its_own_muted_colour_gets_a_solid_one() -> None:
    from tui.themes import solid_muted

    textual_like = {"background": "#000000", "foreground": "#ffffff", "text-muted": "auto 60%"}
    assert solid_muted(textual_like)["text-muted"] == "#999999"  # 60 % white over black, opaque
    own = {**textual_like, "text-muted": "#a0a0a0"}
    assert solid_muted(own) == own
