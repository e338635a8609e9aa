"""The app's live bridge without Textual: inbox wake-ups, backoff, log decoding, the launch form's options."""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tui.actions.launch import build_spec
from tui.actions.options import form_options, preview_name
from tui.commands import run as run_cmd
from tui.errors import GpudeckError
from tui.live.inbox import Inbox, Update
from tui.live.logtext import LogDecoder
from tui.remote.backoff import Backoff


def test_inbox_wakes_once_per_burst_and_keeps_order() -> None:
    wakes = []
    inbox = Inbox(lambda: wakes.append(1))
    threads = [
        threading.Thread(target=lambda n=n: [inbox.put(Update("gpus", f"h{n}", i)) for i in range(500)])
        for n in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items = inbox.drain()
    assert len(items) == 2000 and len(wakes) == 1  # one wake for the whole burst
    for n in range(4):
        assert [u.data for u in items if u.host == f"h{n}"] == list(range(500))
    inbox.put(Update("gpus", "h0"))
    assert len(wakes) == 2 and len(inbox) == 1


def test_backoff_doubles_to_a_cap_and_resets() -> None:
    b = Backoff(period=1.0, first=1.0, cap=10.0)
    assert [b.failed() for _ in range(6)] == [1, 2, 4, 8, 10, 10]
    assert b.ok() == 1.0 and b.failed() == 1


def test_log_decoder_holds_partial_lines_and_collapses_carriage_returns() -> None:
    d = LogDecoder()
    assert d.feed(b"step 1\nste") == ["step 1"]
    assert d.feed(b"p 2\n\x1b[32mok\x1b[0m\n") == ["step 2", "ok"]
    assert d.feed(b" 10%\r 50%\r100%\n") == ["100%"]
    snow = "☃".encode()
    assert d.feed(snow[:1]) == [] and d.feed(snow[1:] + b"\n") == ["☃"]  # split mid-character
    assert d.feed(b"\xff\xfe bad\n") == ["\ufffd\ufffd bad"]
    d.feed(b"no newline at the end")
    assert d.pending() == "no newline at the end"


def test_the_form_and_the_cli_make_the_same_spec(workdir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("MY_TOKEN", "s3cret")
    opts = form_options(
        "local",
        "python train.py --lr '3e-4'",
        name="",
        workdir="",
        env='A=1 B="x y" MY_TOKEN',
        setup="source .venv/bin/activate\n\n  conda activate x\n",
    )
    spec = build_spec(None, opts, "20261129-120000-abcdef")
    assert spec.argv == ("python", "train.py", "--lr", "3e-4")
    assert spec.env == {"A": "1", "B": "x y", "MY_TOKEN": "s3cret"}
    assert spec.setup == ("source .venv/bin/activate", "  conda activate x")
    assert spec.workdir == str(workdir) and spec.name == "train.py-cdef"
    # The same fields through `gpudeck run`'s own parser give the same options, hence the same spec.
    parser = argparse.ArgumentParser()
    run_cmd.add_parser(parser.add_subparsers(dest="verb"))
    args = parser.parse_args(
        [
            "run",
            "--env",
            "A=1",
            "--env",
            "B=x y",
            "--env",
            "MY_TOKEN",
            "--setup",
            "source .venv/bin/activate",
            "--setup",
            "  conda activate x",
            "--",
            "python",
            "train.py",
            "--lr",
            "3e-4",
        ]
    )
    assert run_cmd.options(args) == opts
    cli = build_spec(None, run_cmd.options(args), "20261129-120000-abcdef")
    assert cli.replace(created_at=None) == spec.replace(created_at=None)


@pytest.mark.parametrize(
    ("command", "env", "name", "problem"),
    [
        ("", "", "", "command: enter"),
        ("python 'unclosed", "", "", "command:"),
        ("python x.py", "1BAD=2", "", "not a variable name"),
        ("python x.py", "", "bad name!", "--name"),
        ("python x.py", "A=1=2 ==", "", "not a variable name"),
    ],
)
def test_form_refuses_with_one_line(command: str, env: str, name: str, problem: str) -> None:
    with pytest.raises(GpudeckError) as err:
        form_options("local", command, name=name, env=env)
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_preview_name_follows_the_command() -> None:
    assert preview_name("python -m trainer --steps 3") == "trainer-xxxx"
    assert preview_name("python 'unclosed") == ""


def test_live_bridge_and_config_import_no_textual() -> None:
    code = (
        "import sys, tui.actions, tui.live.link, tui.live.inbox, tui.remote.backoff, tui.live.logtext, "
        "tui.live.costs, tui.settings, tui.config; print('textual' in sys.modules)"
    )
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=repo)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_inbox_take_is_bounded_and_keeps_order() -> None:
    inbox = Inbox()
    inbox.put(Update("jobs", "h", []))
    inbox.put(Update("events", "h", list(range(5)), "j", "0"))
    inbox.put(Update("gpus", "h", {}))
    first = inbox.take(3)
    assert [u.kind for u in first] == ["jobs", "events"] and first[1].data == [0, 1]
    second = inbox.take(10)
    assert [u.kind for u in second] == ["events", "gpus"] and second[0].data == [2, 3, 4]
    assert len(inbox) == 0 and inbox.take(10) == []
