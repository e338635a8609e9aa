"""config.toml read once into typed Settings: defaults, every table, and one-line errors that name
the file, the line and the field."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tui.settings import Settings, SettingsError, load, load_or_default


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_no_file_is_the_defaults(tmp_path: Path) -> None:
    s = load(tmp_path / "config.toml")
    assert s.ssh.alive_timeout == 10.0 and s.ssh.backoff_initial == 0.5 and s.ssh.backoff_max == 15.0
    assert s.cost.currency == "USD" and s.cost.daily_budget is None and dict(s.cost.fx) == {}
    assert s.ui.theme is None and not s.ui.read_only and dict(s.keys) == {} and s.ui.kept_ended_jobs == 2


def test_every_table_is_read_typed(tmp_path: Path) -> None:
    s = load(
        write(
            tmp_path,
            """
# the user's comment
[ui]
theme = "gpudeck-light"
read_only = true
kept_ended_jobs = 5

[ssh]
alive_timeout = 2
backoff_initial = 0.25
backoff_max = 4

[cost]
currency = "eur"
timezone = "Europe/Berlin"
daily_budget = 200

[cost.fx]
usd = 0.92

[keys]
stop_job = "x"
""",
        )
    )
    assert s.ui.theme == "gpudeck-light" and s.ui.read_only is True and s.ui.kept_ended_jobs == 5
    assert (s.ssh.alive_timeout, s.ssh.backoff_initial, s.ssh.backoff_max, s.ssh.heartbeat) == (
        2.0,
        0.25,
        4.0,
        0.5,
    )
    assert s.cost.currency == "EUR" and dict(s.cost.fx) == {"USD": 0.92} and s.cost.daily_budget == 200.0
    assert s.cost.tz.utcoffset(dt.datetime(2026, 7, 1)) == dt.timedelta(hours=2)
    assert dict(s.keys) == {"stop_job": "x"}


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        (
            "[ssh]\nalive_timeout = 2\nbackoff_max = 'bad'\n",
            3,
            "[ssh] backoff_max: expected a number > 0, got 'bad'",
        ),
        ("[ssh]\nbackoff_initial = 0\n", 2, "[ssh] backoff_initial: expected a number > 0"),
        ("[ssh]\nbackoff_initial = 8\nbackoff_max = 2\n", 3, "[ssh] backoff_max: must be >= backoff_initial"),
        ("[ssh]\nalive_timout = 2\n", 2, "[ssh] alive_timout: unknown setting"),
        ("\n[cost]\ndaily_budget = 'lots'\n", 3, "[cost] daily_budget: expected a number > 0, got 'lots'"),
        ("[cost]\ndaily_budget = true\n", 2, "[cost] daily_budget: expected a number > 0"),
        ("[cost]\ntimezone = 'Mars/Olympus'\n", 2, "[cost] timezone: unknown time zone"),
        ("[cost.fx]\nCNY = -1\n", 2, "[cost.fx] CNY: expected a number > 0"),
        (
            "[cost.aliyun]\nprotocol = 'ftp'\n",
            2,
            "[cost.aliyun] protocol: moved: set [cloud] aliyun_ecs_endpoint",
        ),
        (
            "[cost.aws]\nendpoint_url = 'http://x'\n",
            2,
            "[cost.aws] endpoint_url: moved: set [cloud] aws_endpoint_url",
        ),
        ("[ui]\ntheme = 3\n", 2, "[ui] theme: expected a string"),
        ('[ui]\nread_only = "yes"\n', 2, "[ui] read_only: expected true or false, got 'yes'"),
        (
            "[ui]\nreadonly = true\n",
            2,
            "[ui] readonly: unknown setting (known: theme, read_only, kept_ended_jobs, export_dir)",
        ),
        (
            "[ui]\nkept_ended_jobs = -1\n",
            2,
            "[ui] kept_ended_jobs: expected a whole number from 0 to 1000, got -1",
        ),
        (
            "[ui]\nkept_ended_jobs = 2.5\n",
            2,
            "[ui] kept_ended_jobs: expected a whole number from 0 to 1000, got 2.5",
        ),
        ("[keys]\nstop_job = ''\n", 2, "[keys] stop_job: expected a key"),
        ("ssh = 1\n", 1, "ssh: expected a table"),
    ],
)
def test_a_bad_value_names_file_line_and_field(
    tmp_path: Path, text: str, line: int | None, field: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SettingsError) as err:
        load(path)
    message = str(err.value)
    assert "\n" not in message and field in message
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: ")


def test_malformed_toml_says_where(tmp_path: Path) -> None:
    path = write(tmp_path, "[ssh]\nalive_timeout = = 2\n")
    with pytest.raises(SettingsError, match=r"config.toml:2: not valid TOML"):
        load(path)


def test_the_tui_goes_on_with_defaults_and_the_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[cost]\ndaily_budget = 'lots'\n")
    settings, error = load_or_default(path)
    assert settings == Settings(path=path) and error and ":2: [cost] daily_budget" in error
