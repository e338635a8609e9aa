"""Small renderers shared by the panels: level-coloured bars, sparklines and number formats.

Colours are theme variables ($gpu-idle / $gpu-moderate / $gpu-busy …), resolved by Textual when
the Content is drawn, so switching themes recolours everything without a rebuild here.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content

from ..fleet import util_level

BLOCKS = " ▁▂▃▄▅▆▇█"
EMPTY = "$foreground 25%"


def level_style(pct: float | None) -> str:
    return f"$gpu-{util_level(pct)}"


def bar(pct: float | None, width: int, style: str | None = None) -> Content:
    """A horizontal bar, `width` cells, filled to pct (0–100) in the level's colour."""
    if pct is None:
        return Content.styled("·" * width, EMPTY)
    pct = max(0.0, min(100.0, pct))
    eighths = round(pct / 100 * width * 8)
    full, part = divmod(eighths, 8)
    filled = "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part and full < width else "")
    return Content.assemble((filled, style or level_style(pct)), ("─" * (width - len(filled)), EMPTY))


def sparkline(
    values: Sequence[float],
    width: int,
    top: float = 100.0,
    style: str | None = None,
    over: float | None = None,
    over_style: str = "",
) -> Content:
    """The last `width` values as block characters scaled to `top`, each in its level's colour (or
    in `style`, a theme variable; values above `over` in `over_style`: a hot GPU, power over limit)."""
    values = list(values)[-width:]
    parts: list[tuple[str, str]] = [(" " * (width - len(values)), "")]
    for v in values:
        idx = max(0, min(8, round(v / top * 8))) if top > 0 else 0
        colour = style or (level_style(v) if top == 100.0 else "$accent")
        parts.append((BLOCKS[idx] if idx else "▁", over_style if over is not None and v > over else colour))
    return Content.assemble(*parts)


def trend(values: Sequence[float], width: int, style: str) -> Content:
    """`values` (already downsampled to about `width`) scaled between their own min and max: a
    loss's shape, whatever its units; flat as the bottom row when it does not move."""
    values = list(values)[-width:]
    if not values:
        return Content.styled("—", EMPTY)
    lo, hi = min(values), max(values)
    span = hi - lo
    cells = "".join(BLOCKS[1 + round((v - lo) / span * 7)] if span > 0 else BLOCKS[1] for v in values)
    return Content.styled(cells.rjust(width), style)


HOT_C = 85.0  # a GPU this warm (°C) or warmer is highlighted ($gpu-hot): it throttles soon


def temperature(c: float | None) -> Content:
    text = opt(c, ".0f", "°C")
    return Content.styled(text, "bold $gpu-hot") if c is not None and c >= HOT_C else Content(text)


def power(watts: float | None, limit: float | None) -> Content:
    """`250/300W`; drawn above its limit, in $power-over."""
    if watts is None:
        return Content("—")
    text = f"{watts:.0f}/{opt(limit, '.0f')}W"
    return Content.styled(text, "bold $power-over") if limit is not None and watts > limit else Content(text)


def pct(v: float | None) -> str:
    return "  —" if v is None else f"{v:3.0f}%"


def gib(mib: float | None) -> str:
    return "—" if mib is None else f"{mib / 1024:.1f}"


def opt(v: float | None, fmt: str, unit: str = "") -> str:
    return "—" if v is None else f"{v:{fmt}}{unit}"
