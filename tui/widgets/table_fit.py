"""Which jobs-table columns fit a width: kept by priority (name and state first, the sample rate
last), shown in their usual order; the info column (causes, proposals) takes what is left, so a
wide terminal shows whole causes and a narrow one drops numbers rather than scrolling sideways."""

from __future__ import annotations

from collections.abc import Sequence

Column = tuple[str, str, int]  # key, label, width
PRIORITY = (
    "name",
    "id",
    "state",
    "loss",
    "step",
    "runtime",
    "gpu",
    "cost",
    "hosts",
    "rate",
    "trend",
    "eta",
    "burn",
    "tokens",
)  # the last four: the wide layout's (jobs_table.WIDE_EXTRA)
FLEX = "info"
FLEX_MIN = 16
PAD = 2  # DataTable's cell padding, one each side


def fit_columns(columns: Sequence[Column], width: int) -> tuple[Column, ...]:
    """The columns to show in `width` cells; with width <= 0 (not laid out yet), all of them."""
    if width <= 0:
        return tuple(columns)
    by_key = {c[0]: c for c in columns}
    flex = by_key.get(FLEX)
    reserve = FLEX_MIN + PAD if flex else 0
    keep: set[str] = set()
    used = 0
    for key in sorted(by_key, key=lambda k: PRIORITY.index(k) if k in PRIORITY else len(PRIORITY)):
        if key == FLEX:
            continue
        need = by_key[key][2] + PAD
        if used + need + reserve > width and keep:  # the first (the name) is always kept
            break
        keep.add(key)
        used += need
    out = []
    for key, label, w in columns:
        if key == FLEX:
            out.append((key, label, max(FLEX_MIN, width - used - PAD)))
        elif key in keep:
            out.append((key, label, w))
    return tuple(out)
