"""The jobs table fits its width: columns drop by priority (never the name or the state), the info
column takes what is left (whole causes on a wide terminal), and nothing scrolls sideways at 80."""

from __future__ import annotations

from tui.widgets.jobs_table import COLUMNS, ID_COLUMN
from tui.widgets.table_fit import FLEX_MIN, PAD, fit_columns


def total(columns: tuple[tuple[str, str, int], ...]) -> int:
    return sum(w + PAD for _, _, w in columns)


def test_80_columns_keep_the_important_ones_and_fit() -> None:
    fitted = fit_columns(COLUMNS, 78)
    keys = [k for k, _, _ in fitted]
    assert keys[:2] == ["name", "state"] and "loss" in keys and keys[-1] == "info"
    assert "rate" not in keys and "hosts" not in keys  # the last by priority go first
    assert total(fitted) <= 78 and dict((k, w) for k, _, w in fitted)["info"] >= FLEX_MIN


def test_220_columns_show_every_column_and_a_wide_info() -> None:
    fitted = fit_columns(COLUMNS, 218)
    assert [k for k, _, _ in fitted] == [k for k, _, _ in COLUMNS]  # the usual order
    assert total(fitted) == 218 and fitted[-1][2] > 36 * 2


def test_the_id_column_ranks_right_after_the_name_and_an_unknown_width_keeps_all() -> None:
    with_id = (COLUMNS[0], ID_COLUMN, *COLUMNS[1:])
    assert [k for k, _, _ in fit_columns(with_id, 60)][:3] == ["name", "id", "state"]
    assert fit_columns(COLUMNS, 0) == tuple(COLUMNS)
    assert [k for k, _, _ in fit_columns(COLUMNS, 10)] == ["name", "info"]  # the name, whatever the width
