"""No shell through a target: a host or user that ssh would refuse to put in a `%` token (readconf.c
ssh_valid_hostname / ssh_valid_ruser, the class of CVE-2023-51385) is refused before any config is
read, so neither ProxyCommand (`%n`, `%h`, `%r`) nor `Match exec` ever runs a payload from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tui.remote.ssh_config import SshConfig, SshConfigError, jump_chain, resolve, split_target
from tui.remote.ssh_names import valid_hostname, valid_user

# Each payload would create the file MARK in the current directory if a shell ever ran it.
PAYLOADS = [
    "$(touch MARK)",
    "`touch MARK`",
    ";touch MARK",
    "|touch MARK",
    "&touch MARK",
    "&&touch MARK",
    "||touch MARK",
    ">MARK",
    ">>MARK",
    "<MARK",
    "$(touch${IFS}MARK)",
    "${IFS}touch${IFS}MARK",
    "'$(touch MARK)'",
    '"$(touch MARK)"',
    "\\$(touch MARK)",
    "(touch MARK)",
    "{touch,MARK}",
    "x\ntouch MARK",
    "x\rtouch MARK",
    "x\ttouch MARK",
    "x touch MARK",
    "x\x00touch MARK",
    "x\x1b[2Jtouch MARK",
    "x\x7ftouch MARK",
    "x\x85touch MARK",
    "-oProxyCommand=touch MARK",
    "-oLocalCommand=touch${IFS}MARK",
    "a$(touch MARK)b",
    "a`touch MARK`b",
    "$((1))$(touch MARK)",
    "x;touch${IFS}MARK;",
    "x|sh -c 'touch MARK'",
    "x&>MARK",
    "$(printf touch) MARK",
    "x\u2028touch MARK",
    "x\x0btouch MARK",
    "x\x0ctouch MARK",
]
assert len(PAYLOADS) == 37
# ssh takes spaces in a user name (`%r` is then a few words to a shell, none of them run)
USER_ALLOWED = {"x touch MARK", "x\u2028touch MARK"}


@pytest.mark.parametrize("payload", PAYLOADS)
def test_every_payload_is_refused_as_a_host_and_as_a_user(payload: str) -> None:
    # as ssh says it, and before the config is consulted (a Match exec would run on lookup)
    config = SshConfig.from_text('Match exec "exit 1"\n  User x\n')
    for host in (payload, f"pc-{payload}"):
        with pytest.raises(SshConfigError, match="hostname contains invalid characters"):
            resolve(host, config=config)
    if payload in USER_ALLOWED:
        assert resolve(f"{payload}@host", config=config).user == payload
        return
    with pytest.raises(SshConfigError, match="remote username contains invalid characters"):
        resolve(f"{payload}@host", config=config)


def test_the_names_ssh_takes_are_taken() -> None:
    for host in (
        "gpu1",
        "gpu-1.example.com",
        "10.0.0.1",
        "::1",
        "fe80::1%eth0",
        "Host_With_Underscore",
        "a+b",
        "a~b",
    ):
        assert valid_hostname(host), host
    for user in (
        "root",
        "ubuntu",
        "first.last",
        "dom\\user",
        "user name",
        "a$b",
        "é",
    ):  # ssh allows `$`, spaces
        assert valid_user(user), user
    assert split_target("ssh://me@gpu1:2222") == ("me", "gpu1", 2222)
    assert split_target("[::1]:2200") == (None, "::1", 2200)
    for user in ("x -oFoo", "back\\"):  # an option after a space; a trailing backslash
        assert not valid_user(user), user
    with pytest.raises(SshConfigError, match="remote username contains invalid characters"):
        split_target("${FOO}@host")


def test_a_proxyjump_hop_is_held_to_the_same_rule() -> None:
    # ssh runs each hop as `ssh -J … HOP`: its command line refuses the hop's name the same way
    config = SshConfig.from_text("Host box\n  ProxyJump jump$(touch MARK)\n")
    with pytest.raises(SshConfigError, match="hostname contains invalid characters"):
        jump_chain(resolve("box", config=config), config)


def _write_ssh_config(home: Path, text: str) -> None:
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "config").write_text(text)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("GPUDECK_SSH_HOME", str(user))
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "gpudeck"))
    return user


# (ssh config, the target typed): the payload reaches a shell through this token if not refused
TOKEN_CASES = {
    "%n in ProxyCommand": ("Host pc-*\n  ProxyCommand echo %n >/dev/null; exit 1\n", "pc-$(touch MARK)"),
    "%h in ProxyCommand (no HostName)": (
        "Host pc-*\n  ProxyCommand echo %h >/dev/null; exit 1\n",
        "pc-`touch MARK`",
    ),
    "%r in ProxyCommand": ("Host *\n  ProxyCommand echo %r >/dev/null; exit 1\n", "u`touch MARK`@somehost"),
    "%n in Match exec": ('Match exec "echo %n >/dev/null"\n  User x\n', "h;touch MARK"),
    "%h in Match exec": ('Match exec "echo %h >/dev/null"\n  User x\n', "h|touch MARK"),
    "%r in Match exec": ('Match exec "echo %r >/dev/null"\n  User x\n', "x$(touch MARK)y@somehost"),
    "%r, ${VAR} user": (
        "Host *\n  ProxyCommand echo %r >/dev/null; exit 1\n",
        "${HOME}$(touch MARK)@somehost",
    ),
}


@pytest.mark.slow  # CLI processes
@pytest.mark.parametrize("case", list(TOKEN_CASES))
def test_the_cli_refuses_the_target_and_runs_nothing(home: Path, tmp_path: Path, case: str) -> None:
    config, target = TOKEN_CASES[case]
    _write_ssh_config(home, config)
    os.environ.setdefault("SHELL", "/bin/sh")
    for argv in (["hosts", "add", "x", target, "--yes"], ["hosts", "resolve", target]):
        result = gpudeck(*argv, cwd=tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        assert "contains invalid characters" in result.stderr and len(result.stderr.splitlines()) == 1
        assert not list(tmp_path.glob("MARK*")), f"{case}: the payload ran"
    hosts = tmp_path / "gpudeck" / "hosts.toml"
    assert not hosts.exists() or target not in hosts.read_text()


@pytest.mark.slow  # a CLI process
def test_a_hostile_target_already_in_hosts_toml_is_refused_at_connect(home: Path, tmp_path: Path) -> None:
    _write_ssh_config(home, "Host pc-*\n  ProxyCommand echo %n >/dev/null; exit 1\n")
    (tmp_path / "gpudeck").mkdir()
    (tmp_path / "gpudeck" / "hosts.toml").write_text('[hosts.evil]\ntarget = "pc-$(touch MARK)\\u001b[2J"\n')
    result = gpudeck("ps", cwd=tmp_path)
    assert not list(tmp_path.glob("MARK*"))
    assert "hostname contains invalid characters" in result.stderr
    assert "\x1b" not in result.stderr and "\\x1b[2J" in result.stderr  # shown, not acted on
