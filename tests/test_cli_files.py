"""Your files, any shape (#25, findings 14-15): a hosts.toml or config.toml that cannot be used is one
line naming the file and line and exit 2, before anything is done; a home that cannot be written or a
state.db that cannot be used is one line with the real cause; never "internal error"."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.test_home_faults import locked, read_only


def _one_line(result, code: int, *needles: str) -> None:  # type: ignore[no-untyped-def]
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert len(lines) == 1 and "internal error" not in lines[0] and "Traceback" not in result.stderr, (
        result.stderr
    )
    for needle in needles:
        assert needle in lines[0], lines[0]


HOSTS_CASES = {
    "binary": (b"\xfe\xff\x00garbage\n", "hosts.toml:1: not UTF-8 text"),
    "hosts is a number": (b"hosts = 5\n", "hosts.toml:1: hosts: expected tables"),
    "idle_stop a number": (
        b"[hosts.local]\nidle_stop = 5\n",
        "hosts.toml:2: [hosts.local] idle_stop: expected a string",
    ),
    "price not a number": (
        b'[hosts.local]\nprice_per_hour = "abc"\n',
        "hosts.toml:2: [hosts.local] price_per_hour: expected a number",
    ),
    "price nan": (
        b"[hosts.local]\nprice_per_hour = nan\n",
        "hosts.toml:2: [hosts.local] price_per_hour: expected a number >= 0",
    ),
    "unknown top-level key": (b"colour = 1\n", "hosts.toml:1: colour: unknown"),
    "nested too deeply": (
        b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "hosts.toml: not valid TOML: arrays or tables nested",
    ),
    "local with a target": (
        b'[hosts.local]\ntarget = "x"\n',
        "hosts.toml:2: [hosts.local] target: local is this machine",
    ),
}


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize("case", list(HOSTS_CASES))
@pytest.mark.parametrize("verb", [["ps"], ["prices"], ["run", "--", "true"]])
def test_a_hosts_toml_that_cannot_be_used_stops_every_verb_in_one_line(
    gpudeck_home: Path, workdir: Path, case: str, verb: list[str]
) -> None:
    content, said = HOSTS_CASES[case]
    (gpudeck_home / "hosts.toml").write_bytes(content)
    _one_line(gpudeck(*verb, cwd=workdir), 2, said)
    assert not (gpudeck_home / "local-agent" / "jobs").exists()  # nothing was started


def test_a_binary_hosts_toml_does_not_stop_the_tui(gpudeck_home: Path) -> None:
    from tui.app import GpuDeckApp

    (gpudeck_home / "hosts.toml").write_bytes(b"\xfe\xff\x00garbage\n")
    app = GpuDeckApp(store=None)
    assert any("hosts.toml:1: not UTF-8 text" in line for line in app.startup_errors), app.startup_errors


CONFIG_CASES = {
    "not TOML": (b"[ui\n", "config.toml:1: not valid TOML"),
    "unknown section": (b"# mine\n[colours]\nx = 1\n", "config.toml:2: colours: unknown section"),
    "binary": (b"\x80\x81", "config.toml:1: not UTF-8 text"),
    "nested too deeply": (
        b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "config.toml: not valid TOML: arrays or tables nested",
    ),
}


@pytest.mark.slow  # the everyday subset stays under a minute serially
@pytest.mark.parametrize("case", list(CONFIG_CASES))
@pytest.mark.parametrize("verb", [["ps"], ["hosts"], ["hosts", "--json"]])
def test_a_broken_config_toml_stops_the_cli_in_one_line(
    gpudeck_home: Path, case: str, verb: list[str]
) -> None:
    content, said = CONFIG_CASES[case]
    (gpudeck_home / "config.toml").write_bytes(content)
    result = gpudeck(*verb)
    _one_line(result, 2, said)
    assert "unreachable" not in result.stdout and result.stdout == ""


@pytest.mark.parametrize(
    "verb",
    [["hosts", "set", "local", "price_per_hour=3"], ["hosts", "add", "box", "127.0.0.1:1", "--no-connect"]],
)
def test_writing_hosts_toml_on_a_read_only_home_says_so(gpudeck_home: Path, verb: list[str]) -> None:
    (gpudeck_home / "hosts.toml").write_text("# mine\n")
    with read_only(gpudeck_home):
        result = gpudeck(*verb)
    _one_line(result, 1, "hosts.toml: cannot write", "read-only file system")
    assert "disk full" not in result.stderr
    assert (gpudeck_home / "hosts.toml").read_text() == "# mine\n"  # nothing lost


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_a_state_db_that_is_a_directory_is_named_as_such(gpudeck_home: Path) -> None:
    (gpudeck_home / "state.db").mkdir()
    set_price = gpudeck("hosts", "set", "local", "price_per_hour=3")
    # hosts.toml is the setting; state.db only dates it: the change is made, the warning says why not dated
    _one_line(set_price, 0, "state.db", "is not a file")
    assert "price_per_hour = 3.0" in (gpudeck_home / "hosts.toml").read_text()
    cost = gpudeck("cost")
    _one_line(cost, 1, "state.db", "is not a file")
    assert "disk full" not in cost.stderr


@pytest.mark.slow
def test_cost_and_hosts_set_with_a_locked_state_db_answer(gpudeck_home: Path) -> None:
    assert gpudeck("hosts", "set", "local", "price_per_hour=1").returncode == 0  # state.db exists, WAL
    with locked(gpudeck_home / "state.db"):
        cost = gpudeck("cost", "--json")  # a report: it answers, saying at most that it recorded nothing
        assert (
            cost.returncode == 0 and len(cost.stderr.splitlines()) <= 1 and "internal" not in cost.stderr
        ), cost.stderr
        assert json.loads(cost.stdout)["hosts"][0]["name"] == "local"
        set_price = gpudeck("hosts", "set", "local", "price_per_hour=2")
        _one_line(set_price, 0, "state.db", "locked")
    assert "price_per_hour = 2.0" in (gpudeck_home / "hosts.toml").read_text()
    assert sqlite3.connect(str(gpudeck_home / "state.db")).execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_a_policies_toml_nested_too_deeply_is_one_line(gpudeck_home: Path) -> None:
    (gpudeck_home / "policies.toml").write_bytes(b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n")
    _one_line(
        gpudeck("policy", "eval"), 2, "policies.toml: not valid TOML: arrays or tables nested too deeply"
    )


def test_a_replay_of_a_file_that_is_not_text_is_one_line(gpudeck_home: Path) -> None:
    _one_line(gpudeck("--replay", "/bin/true", "ps"), 2, "/bin/true: not a gpudeck recording")
