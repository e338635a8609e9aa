"""Help as kubectl/gh/docker give it (#25, finding 18): --version, `gpudeck help [VERB]`, a description
and examples for every verb, a help text for every option, a verb named in its usage errors, and shell
completion for bash, zsh and fish."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from tests.conftest import gpudeck


def _verbs(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                verb = f"{path} {name}".strip()
                out += [(verb, sub), *_verbs(sub, verb)]
    return out


def test_every_verb_has_a_description_and_examples_and_every_option_a_help() -> None:
    from tui.cli import build_parser

    verbs = _verbs(build_parser())
    assert {
        "ps",
        "inspect",
        "logs",
        "metrics",
        "stop",
        "kill",
        "rm",
        "cost",
        "hosts add",
        "help",
        "completion",
    } <= {v for v, _ in verbs}
    for verb, parser in verbs:
        text = parser.format_help()
        assert parser.description, verb
        assert "examples:\n  $ gpudeck " in text, verb
        assert "%%" not in text, verb
        for action in parser._actions:
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                assert action.help, f"{verb}: {action.option_strings or action.dest}"


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_version_and_the_help_verb(gpudeck_home: Path) -> None:
    version = gpudeck("--version")
    assert version.returncode == 0 and version.stdout.startswith("gpudeck "), version
    helped = gpudeck("help", "hosts", "add")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: gpudeck hosts add"), helped
    assert "examples:" in helped.stdout
    unknown = gpudeck("help", "frobnicate")
    assert unknown.returncode == 2 and unknown.stderr.startswith("gpudeck help: no verb 'frobnicate'")


def test_help_works_while_config_toml_is_broken(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text("[ui\n")
    assert gpudeck("help", "ps").returncode == 0


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["ps", "extra"], "gpudeck ps: unrecognized arguments: extra"),
        (["hosts", "rm", "a", "b"], "gpudeck hosts rm: unrecognized arguments: b"),
    ],
)
def test_extra_words_name_the_verb(gpudeck_home: Path, argv: list[str], said: str) -> None:
    result = gpudeck(*argv)
    assert result.returncode == 2 and result.stderr.strip() == said, result.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(gpudeck_home: Path, shell: str) -> None:
    result = gpudeck("completion", shell)
    assert result.returncode == 0 and "gpudeck" in result.stdout and "_ARGCOMPLETE" in result.stdout, (
        result.stderr
    )


def test_completion_answers_the_shell(gpudeck_home: Path, tmp_path: Path) -> None:
    """What the scripts ask: gpudeck run with argcomplete's environment, completing `gpudeck hosts a`."""
    out = tmp_path / "completions"
    line = "gpudeck hosts a"
    env = {
        "_ARGCOMPLETE": "1",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_IFS": "\n",
        "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
    }
    result = gpudeck(env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    assert out.read_text().split() == ["add"]


def test_top_help_lists_every_verb_as_its_module_says_without_importing_one() -> None:
    """Issue 33, cheap start: `gpudeck --help` is built from cli.SUMMARIES, not by importing every
    verb's module (and the session's SSH stack): they must say what the modules say."""
    import argparse
    import subprocess
    import sys

    from tui.cli import SUMMARIES, build_parser

    full = build_parser()
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert {c.dest: c.help for c in sub._choices_actions} == SUMMARIES
    probe = (
        "import sys, contextlib, io\n"
        "from tui.cli import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        run(['--help'])\n    except SystemExit:\n        pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('tui.commands', 'tui.session', 'paramiko'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out  # before: every verb's module, the session and paramiko
