"""What the CLI says about itself: usage errors name gpudeck once, help lists every verb and says
that gpudeck alone opens the TUI. In-process (`tui.cli.run`): no job, no agent, no interpreter start."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import run


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps help to the terminal: one line per verb


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = run(list(argv))
    except SystemExit as exc:  # --help exits from inside argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["inspect"], "gpudeck inspect: the following arguments are required: job"),
        (["hosts", "set", "box"], "gpudeck hosts set: the following arguments are required: KEY=VALUE"),
        (["stop", "x", "--grace", "soon"], "gpudeck stop: argument --grace: invalid float value: 'soon'"),
        (["--bogus"], "gpudeck: unrecognized arguments: --bogus"),
    ],
)
def test_a_usage_error_names_gpudeck_once(
    gpudeck_home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err == line + "\n"
    assert err.count("gpudeck") == 1


def test_hosts_help_lists_every_action(gpudeck_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "hosts", "--help")
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("    ") and line.split()}
    assert {"add", "rm", "set", "trust"} <= listed, out
    assert "set" in out.split("positional arguments")[0]  # the description names it too
    code, out, _ = cli(capsys, "--help")
    [hosts_line] = [line for line in out.splitlines() if line.strip().startswith("hosts ")]
    assert "set" in hosts_line.split(";", 1)[1]


def test_help_says_no_command_opens_the_tui(gpudeck_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "with no command to open the terminal UI (the TUI)" in text


def test_run_help_shows_the_idle_stop_form_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "run", "--help")
    assert code == 0 and "--idle-stop 30m@10%+15m" in out and "%%" not in out
