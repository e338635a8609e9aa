"""Issue 35, `--json` everywhere: every verb of cli.VERBS either prints data, has `--json` and a
section in docs/json.md (its shape and top-level keys, with an example), or is listed there as
printing no data; the real CLI's `--json` output parses and has exactly the documented keys; and
the exit codes the docs list are the ones returned (unknown job, usage error, unreachable host)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "json.md"
SHAPES = ("object", "list of objects", "JSON lines of objects")


def documented() -> tuple[dict[str, tuple[str, list[str]]], list[str]]:
    """{"ps": (shape, keys), "hosts check": …} and the verbs listed as printing no data."""
    text = DOC.read_text()
    sections: dict[str, tuple[str, list[str]]] = {}
    for verb, body in re.findall(r"^## `gpudeck ([a-z ]+)`\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        m = re.search(r"^Shape: (.+?); keys: (.+)$", body, re.M)
        assert m, f"docs/json.md: `{verb}` has no `Shape: …; keys: …` line"
        sections[verb] = (m.group(1), re.findall(r"`([a-z_]+)`", m.group(2)))
    none = text.split("## Verbs that print no data", 1)[1].split("\n## ", 1)[0]
    return sections, re.findall(r"^- `([a-z ]+)`", none, re.M)


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every verb's parser, and each action's (`hosts check`, `cloud ls`…), by name."""
    from tui.cli import VERBS, build_parser

    out: dict[str, argparse.ArgumentParser] = {}
    for verb in VERBS:
        top = next(a for a in build_parser(verb)._actions if isinstance(a, argparse._SubParsersAction))
        out[verb] = top.choices[verb]
        for action in (a for a in out[verb]._actions if isinstance(a, argparse._SubParsersAction)):
            out.update({f"{verb} {name}": p for name, p in action.choices.items()})
    return out


def test_every_verb_is_documented_and_each_data_verb_has_json() -> None:
    sections, no_data = documented()
    found = parsers()
    for name, parser in found.items():
        has_json = any("--json" in a.option_strings for a in parser._actions)
        group = any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
        if name in sections:
            assert has_json, f"`{name}` is documented in docs/json.md but has no --json"
            assert sections[name][0] in SHAPES, name
        elif not group:  # a group (`cloud`, `policy`) is its actions
            assert name in no_data, (
                f"`{name}`: neither documented in docs/json.md nor listed as printing no data"
            )
    assert set(sections) <= set(found) and set(no_data) <= set(found)  # nothing stale in the docs


def keys_of(shape: str, out: str) -> list[str] | None:
    """The top-level keys of the output (None: a list with nothing in it to look at)."""
    if shape == "JSON lines of objects":
        first: Any = json.loads(out.splitlines()[0])
    elif shape == "list of objects":
        items = json.loads(out)
        assert isinstance(items, list)
        if not items:
            return None
        first = items[0]
    else:
        first = json.loads(out)
    assert isinstance(first, dict)
    return sorted(first)


@pytest.mark.slow  # ~25 CLI runs and three jobs
@pytest.mark.timeout(240)
def test_each_data_verb_prints_its_documented_keys(gpudeck_home: Path, workdir: Path, tmp_path: Path) -> None:
    sections, _ = documented()
    (workdir / "a.py").write_text("print(1)\n")
    (workdir / "log.txt").write_text("step=1 loss=0.5\n")
    points = "echo step=1 loss=0.5; echo step=2 loss=0.4"
    ended = gpudeck("run", "--name", "ended", "--", "bash", "-c", points, cwd=workdir).stdout.strip()
    wait_for(lambda: "exited" in gpudeck("inspect", ended, cwd=workdir).stdout, what="the job's end")
    sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
    live = json.loads(gpudeck("run", "--json", "--name", "live", "--", *sleeper, cwd=workdir).stdout)["id"]
    other = gpudeck("run", "--name", "other", "--", *sleeper, cwd=workdir).stdout.strip()
    runs = {
        "run": ["run", "--json", "--name", "r", "--", "true"],
        "watch": ["watch", "--json", str(workdir / "log.txt")],
        "sync": ["sync", "--json", str(workdir)],
        "gc": ["gc", "--json"],
        "ps": ["ps", "--json", "--all"],
        "queue": ["queue", "--json"],
        "inspect": ["inspect", ended, "--json"],
        "pull": ["pull", ended, "a.py", str(tmp_path / "pulled"), "--json"],
        "metrics": ["metrics", ended, "--json"],
        "logs": ["logs", ended, "--json"],
        "dump": ["dump", live, "--json"],
        "autostop": ["autostop", "pause", live, "--json"],
        "restart": ["restart", ended, "--json"],
        "stop": ["stop", live, "--grace", "1", "--json"],
        "kill": ["kill", other, "--json"],
        "rm": ["rm", ended, "--json"],
        "hosts": ["hosts", "--json"],
        "hosts check": ["hosts", "check", "local", "--json"],
        "hosts disconnect": ["hosts", "disconnect", "--json"],  # no SSH host here: an empty list
        "cost": ["cost", "--json"],
        "prices": ["prices", "--json"],
        "policy eval": ["policy", "eval", "--json"],
        "cloud ls": ["cloud", "ls", "--json"],  # no region here: an empty list (exit 1: no provider asked)
        "cloud idle": ["cloud", "idle", "--json"],
        "cloud enforce": ["cloud", "enforce", "--json"],
    }
    # Not run here: `scale` (a resize needs torchrun and a checkpoint) and `hosts show` (a Slurm host).
    assert set(runs) | {"scale", "hosts show"} == set(sections)
    seen = []
    for verb, argv in runs.items():
        r = gpudeck(*argv, cwd=workdir)
        assert r.stdout.strip(), f"{verb}: no output ({r.returncode}: {r.stderr})"
        shape, keys = sections[verb]
        got = keys_of(shape, r.stdout)
        if got is not None:
            assert got == sorted(keys), f"gpudeck {verb} --json: {got} but docs/json.md says {sorted(keys)}"
            seen.append(verb)
    assert (
        len(seen) >= len(runs) - 6
    )  # only the cloud's (no provider here), queue's, policy's and disconnect's are empty


def exit_codes() -> dict[str, int]:
    """The README's table: a few words of each meaning -> its code."""
    table = re.findall(r"^\| `(\d)` \| (.+?) \|$", (ROOT / "README.md").read_text(), re.M)
    return {meaning.split(",")[0].split(" (")[0]: int(code) for code, meaning in table}


def test_the_documented_exit_codes_are_the_ones_returned(gpudeck_home: Path, workdir: Path) -> None:
    codes = exit_codes()
    assert codes["no such job"] == 3 and codes["bad usage"] == 2 and codes["host unreachable"] == 4
    assert gpudeck("inspect", "nosuchjob", "--json", cwd=workdir).returncode == codes["no such job"]
    assert gpudeck("metrics", "--json", "--bogus", cwd=workdir).returncode == codes["bad usage"]
    assert gpudeck("hosts", "add", "dead", "root@127.0.0.1:1", "--no-connect", cwd=workdir).returncode == 0
    r = gpudeck("ps", "--json", cwd=workdir)
    assert r.returncode == codes["host unreachable"] and json.loads(r.stdout) == []  # the others' jobs: none
