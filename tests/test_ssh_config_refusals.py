"""Config files `ssh -G` refuses whole are refused by gpudeck too: one line naming file:line, exit 2."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.test_ssh_resolve import configs, ssh_g  # noqa: F401  (fixture)
from tui.remote.ssh_config import SshConfigError, load_config, resolve
from tui.remote.ssh_keywords import ARITY, NEWER

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="the OpenSSH client is not installed")

# file -> (the file ssh names, the line): what each breaks is said in the file's name
REFUSED = {
    "bad_bom.conf": ("bad_bom.conf", 1),
    "bad_unknown.conf": ("bad_unknown.conf", 4),
    "bad_user_novalue.conf": ("bad_user_novalue.conf", 4),
    "bad_user_empty.conf": ("bad_user_empty.conf", 2),
    "bad_quote.conf": ("bad_quote.conf", 2),
    "bad_include_novalue.conf": ("included_novalue.conf", 2),
    "bad_extra.conf": ("bad_extra.conf", 2),
    "bad_match_all.conf": ("bad_match_all.conf", 1),
    "bad_match_criterion.conf": ("bad_match_criterion.conf", 2),
    "bad_match_missing.conf": ("bad_match_missing.conf", 1),
    "bad_proxyjump.conf": ("bad_proxyjump.conf", 2),
    "bad_separator.conf": ("bad_separator.conf", 2),
    "bad_ignoreunknown_late.conf": ("bad_ignoreunknown_late.conf", 2),
}


def ssh_refusal(config: Path) -> str:
    done = subprocess.run(
        ["ssh", "-G", "-F", str(config), "h"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert done.returncode == 255, done.stdout[-300:]
    return done.stderr


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_ssh_refuses_is_refused_naming_its_line(configs: Path, name: str) -> None:  # noqa: F811
    file, line = REFUSED[name]
    said = ssh_refusal(configs / name)
    assert re.search(rf"{re.escape(file)}:? line {line}\b", said), said  # the oracle agrees on the line
    with pytest.raises(SshConfigError) as refused:
        resolve("h", config=load_config(configs / name))
    assert f"{configs / file}:{line}: " in str(refused.value) and "\n" not in str(refused.value)


def test_a_bom_is_named(configs: Path) -> None:  # noqa: F811
    with pytest.raises(
        SshConfigError, match=r"Bad configuration option: \\ufeffhost \(the file starts with a UTF-8"
    ):
        resolve("other", config=load_config(configs / "bad_bom.conf"))


@pytest.mark.slow
def test_the_cli_refuses_with_one_line_and_exit_2(configs: Path) -> None:  # noqa: F811
    bom = gpudeck("hosts", "resolve", "-F", str(configs / "bad_bom.conf"), "other", cwd=configs)
    assert bom.returncode == 2 and bom.stdout == "", bom.stdout
    assert bom.stderr.count("\n") == 1 and f"{configs / 'bad_bom.conf'}:1: " in bom.stderr
    missing = gpudeck("hosts", "resolve", "-F", str(configs / "nonexistent"), "h", cwd=configs)
    assert (
        subprocess.run(
            ["ssh", "-G", "-F", str(configs / "nonexistent"), "h"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        ).returncode
        == 255
    )
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "nonexistent: No such file" in missing.stderr
    spaced = gpudeck("hosts", "resolve", "a b", cwd=configs)
    assert spaced.returncode == 2 and spaced.stdout == ""
    assert spaced.stderr.count("\n") == 1 and "hostname contains invalid characters" in spaced.stderr


@pytest.mark.slow
def test_every_keyword_ssh_knows_is_known(tmp_path: Path) -> None:
    # ssh names a keyword it does not know (a value it dislikes is another error, some fatal: one
    # file each); and every keyword `ssh -G` prints is one gpudeck knows.
    config = tmp_path / "one.conf"
    unknown = []
    for keyword in sorted(k for k in ARITY if k not in NEWER) + ["nosuchkeyword"]:
        config.write_text(f"{keyword} x\n")
        said = subprocess.run(
            ["ssh", "-G", "-F", str(config), "h"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        ).stderr
        unknown += re.findall(r"Bad configuration option: (\S+)", said)
    assert unknown == ["nosuchkeyword"]
    printed = subprocess.run(
        ["ssh", "-G", "-F", "/dev/null", "h"],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    ).stdout.splitlines()
    assert {line.split(" ", 1)[0].lower() for line in printed} - set(
        ARITY
    ) == set()  # ssh prints one CamelCased


def test_match_exec_runs_under_SHELL_as_ssh_does(configs: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    # A shell that says yes to everything: under it `exec false` matches, under /bin/sh it would not.
    shell = configs / "yes-shell"
    shell.write_text("#!/bin/sh\nexit 0\n")
    shell.chmod(0o755)
    config = configs / "shell.conf"
    config.write_text('Match exec "false"\n  Port 2345\n')
    monkeypatch.setenv("SHELL", str(shell))
    assert "port 2345" in ssh_g(config, "h")
    assert resolve("h", config=load_config(config)).port == 2345
    monkeypatch.setenv("SHELL", str(configs / "not-there"))
    with pytest.raises(
        SshConfigError, match=r"shell\.conf:1: Match exec: shell .*not-there. is not executable"
    ):
        resolve("h", config=load_config(config))


def test_an_exec_after_a_miss_is_not_run(configs: Path) -> None:  # noqa: F811
    ssh_g(configs / "match.conf", "h")
    assert not (configs / "exec-ran").exists()  # the oracle skips it
    resolve("h", config=load_config(configs / "match.conf"))
    assert not (configs / "exec-ran").exists()


def test_percent_j_is_unknown_as_in_9_2(configs: Path) -> None:  # noqa: F811
    config = configs / "j.conf"
    config.write_text("Host h\n  ProxyJump jumper\n  UserKnownHostsFile ~/kh_%j\n")
    said = subprocess.run(
        ["ssh", "-G", "-F", str(config), "h"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert said.returncode == 255 and "%j" in said.stderr, said.stderr
    with pytest.raises(SshConfigError, match="unknown token %j"):
        resolve("h", config=load_config(config))
    assert os.environ["HOME"]  # the fixture's home: nothing of the user's is read
