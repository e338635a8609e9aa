"""policies.toml read into typed rules: the README's seed file, and one-line errors naming file:line:field."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from tui.policy import durations
from tui.policy.rules import PolicyError, load, parse

README = Path(__file__).resolve().parent.parent / "README.md"


def seed_text() -> str:
    """The example file in the README's Policies section (so the README stays true)."""
    section = README.read_text().split("## Policies", 1)[1]
    return re.search(r"```toml\n(.*?)```", section, re.S).group(1)


def test_the_readme_seed_rules_read_typed(tmp_path: Path) -> None:
    p = parse(seed_text(), tmp_path / "policies.toml")
    office, backlog, bigger = p.rules
    assert (
        office.kind,
        office.jobs,
        office.days,
        office.start,
        office.end,
        office.timezone,
        office.nodes,
        office.otherwise,
    ) == ("schedule", "yolo*", frozenset(range(5)), dt.time(9), dt.time(18), "Asia/Shanghai", 4, 1)
    assert (
        backlog.kind,
        backlog.metric,
        backlog.above,
        backlog.hold,
        backlog.add,
        backlog.min,
        backlog.max,
        backlog.cooldown,
        backlog.auto,
    ) == ("metric", "backlog", 10000.0, 300.0, 1, 1, 8, 600.0, True)
    assert (bigger.kind, bigger.metric, bigger.above, bigger.hold, bigger.auto) == (
        "vertical",
        "gpu_util",
        90.0,
        600.0,
        False,
    )
    assert office.line == 1 and seed_text().splitlines()[backlog.line - 1] == "[[rule]]"
    assert office.matches("yolo-v8", [], {}) and not office.matches("bert", [], {})


def test_no_file_is_no_rules(tmp_path: Path) -> None:
    assert load(tmp_path / "policies.toml").rules == ()


def test_pools_and_rules_that_name_them(tmp_path: Path) -> None:
    p = parse(
        '[pool.a10]\nhosts = ["gpu-a", "gpu-b"]\n\n[[rule]]\nname = "n"\nkind = "schedule"\npool = "a10"\n'
        'between = "08:00-09:00"\nnodes = 2\n',
        tmp_path / "p.toml",
    )
    [rule] = p.rules
    assert p.pools["a10"].hosts == ("gpu-a", "gpu-b") and not p.pools["a10"].launch
    assert rule.matches("anything", ["gpu-b", "gpu-a"], p.pools) and not rule.matches(
        "x", ["gpu-a", "local"], p.pools
    )


BASE = '[[rule]]\nname = "r"\nkind = "metric"\njobs = "*"\nmetric = "backlog"\nabove = 1\nadd = 1\nmax = 3\n'


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (BASE.replace("above = 1", 'above = "lots"'), 6, "rule 'r': above: expected a number, got 'lots'"),
        (BASE + 'for = "soon"\n', 9, "rule 'r': for: expected a duration such as"),
        # issue 32, item 7: a threshold that never fires, and a misspelt table, each with its line
        (BASE.replace("above = 1", "above = inf"), 6, "rule 'r': above: expected a finite number, got inf"),
        (
            BASE.replace("[[rule]]", "[[rules]]"),
            1,
            "rules: unknown table or key (known: [[rule]], [pool.NAME]) — did you mean [[rule]]?",
        ),
        (BASE.replace("max = 3\n", ""), 7, "rule 'r': add: a rule that adds nodes needs max = N"),
        (BASE.replace("max = 3", "max = 0"), 8, "rule 'r': max: expected a node count (1 or more), got 0"),
        (BASE + "min = 4\n", 8, "rule 'r': max: must be >= min (4)"),
        (BASE + "colour = 1\n", 9, "rule 'r': colour: unknown field for a metric rule"),
        (
            BASE.replace('jobs = "*"', 'pool = "gpus"'),
            4,
            "rule 'r': pool: no [pool.gpus] (pools: none defined)",
        ),
        (
            BASE.replace('kind = "metric"', 'kind = "magic"'),
            3,
            "rule 'r': kind: expected one of metric, schedule, vertical",
        ),
        (BASE + BASE, 10, "rule 'r': name: 'r' is used by an earlier rule"),
        (
            '[[rule]]\nname = "s"\nkind = "schedule"\njobs = "*"\ndays = "mon-fri"\nbetween = "18:00-09:00"\nnodes = 1\n',
            6,
            "rule 's': between: '18:00-09:00': the end must be after the start",
        ),
        (
            '[[rule]]\nname = "s"\nkind = "schedule"\njobs = "*"\ndays = "monday"\nbetween = "9:00-18:00"\nnodes = 1\n',
            5,
            "rule 's': days: 'monday' is not a day",
        ),
        (
            '[[rule]]\nname = "s"\nkind = "schedule"\njobs = "*"\nbetween = "09:00-18:00"\ntimezone = "Mars/Olympus"\n'
            "nodes = 1\n",
            6,
            "rule 's': timezone: unknown time zone 'Mars/Olympus'",
        ),
        (
            '[[rule]]\nname = "v"\nkind = "vertical"\njobs = "*"\nauto = "yes"\n',
            5,
            "rule 'v': auto: expected true or false",
        ),
        ('\n\n[[rule]]\nkind = "metric"\n', 3, "rule 1: name: expected a name for the rule"),
        ("[pool.x]\nhosts = []\n", 2, "[pool.x] hosts: expected a list of host names"),
        (
            '[[rule]]\nname = "v"\nkind = "vertical"\njobs = "*"\npool = "x"\n',
            4,
            "rule 'v': jobs: expected either jobs",
        ),
    ],
)
def test_a_bad_field_is_one_line_naming_file_line_and_field(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "policies.toml"
    path.write_text(text)
    with pytest.raises(PolicyError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}:{line}: {message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_not_toml_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    path.write_text("[[rule]\n")
    with pytest.raises(PolicyError, match=r"policies.toml: not valid TOML: .*line 1"):
        load(path)


def test_the_value_languages() -> None:
    assert [durations.duration(t) for t in ("90s", "5m", "1.5h", "2d", 30)] == [90, 300, 5400, 172800, 30]
    assert durations.days("sat,sun") == {5, 6} and durations.days("fri-mon") == {4, 5, 6, 0}
    assert durations.days("daily") == set(range(7))
    assert durations.window("9:00-18:30") == (dt.time(9), dt.time(18, 30))
    assert durations.show(5430) == "1h30m30s" and durations.show(0) == "0s"
    for empty in ("09:00-09:00", "18:00-09:00"):  # the end is exclusive: an empty window is a mistake
        with pytest.raises(ValueError, match="the end must be after the start"):
            durations.window(empty)


def test_the_seed_metric_is_read_from_a_plain_backlog_line() -> None:
    from remote_agent.metrics.parse import parse_line

    assert parse_line("backlog=12000") == {"backlog": 12000}
    assert parse_line("backlog: 12000 samples") == {"backlog": 12000}
    assert parse_line("the backlog is long") is None


def test_weekdays_and_weekends_are_days(tmp_path: Path) -> None:
    text = '[[rule]]\nname = "s"\nkind = "schedule"\njobs = "*"\ndays = "{}"\nbetween = "09:00-18:00"\nnodes = 1\n'
    assert parse(text.format("weekdays"), tmp_path / "p.toml").rules[0].days == frozenset(range(5))
    assert parse(text.format("weekends"), tmp_path / "p.toml").rules[0].days == frozenset((5, 6))
