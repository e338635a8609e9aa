"""`gpudeck hosts resolve` against the real `ssh -G`: the same answer on configs full of traps."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tui.remote.ssh_config import SshConfig, jump_chain, load_config, resolve

DATA = Path(__file__).parent / "data" / "ssh_config"
KEYWORDS = [
    "hostname",
    "user",
    "port",
    "identityfile",
    "identitiesonly",
    "certificatefile",
    "proxycommand",
    "proxyjump",
    "hostkeyalias",
    "userknownhostsfile",
    "globalknownhostsfile",
    "stricthostkeychecking",
    "connecttimeout",
    "serveraliveinterval",
    "serveralivecountmax",
    "identityagent",
    "batchmode",
]
CASES = {
    # first value wins, `!` and wildcards in Host, `# comment`, quotes, tokens left raw, names lower-cased
    "patterns.conf": [
        "web1.example",
        "web9.example",
        "foo.example",
        "Gpu1",
        "gpu1",
        "jump-target",
        "eq-host",
        "root@web1.example",
        "UPPER.example",
        "unmatched",
        "hashed",
        "pj-uri",
        "pj-quoted",
        "pj-blank",
        "pj-addr",
        "pj-v6",
        "pj-none",
    ],
    # Match host/originalhost/user/localuser/exec/all and `!`, Include inside a Host block applying only there
    "match.conf": [
        "build-1",
        "deploy@build-1",
        "alias-corp",
        "x.corp",
        "secret.corp",
        "inc",
        "inc-sub",
        "other",
        "execme",
        "eqmatch",
        "execk",
    ],
    # CanonicalizeHostname and the second pass it brings: Match canonical, Host seeing the new name
    "canonical.conf": ["localhost.", "LocalHost.", "foo", "proxied", "a.b.c", "localhost"],
    # `Match final`: the second pass without canonicalization, Host matching the HostName
    "final.conf": ["myalias", "other", "real.example", "x"],
    # `Match !final` asks for the second pass too; without any, `Match canonical` never matches
    "notfinal.conf": ["h"],
    "nofinal.conf": ["h"],
    # IdentityAgent (hardware and password-manager agents)
    "agent.conf": ["hw", "off", "env", "plain", "other", "batch", "batch2", "brace"],
    # StrictHostKeyChecking in every spelling ssh takes (`true` is `yes`)
    "strict.conf": ["t", "f", "y", "o", "a", "z"],
    # lines end at \n only (not \v \f \x1c U+2028 or a lone \r); IgnoreUnknown; keywords ssh knows but ignores
    "separators.conf": ["vt", "ff", "fs", "ls", "cr", "crlf", "ignored", "eq"],
}

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="the OpenSSH client is not installed")


@pytest.fixture
def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUDECK_SSH_HOME", str(home))  # ssh reads the passwd home: ours
    for src in DATA.iterdir():  # as bytes: a lone \r or a BOM must reach both readers as written
        (tmp_path / src.name).write_bytes(src.read_bytes().replace(b"@DIR@", str(tmp_path).encode()))
    return tmp_path


def ssh_g(config: Path, target: str) -> list[str]:
    """`ssh -G`'s lines for our keywords. ssh expands `~` with the passwd entry's home, gpudeck with
    $HOME (the test's home): the passwd home is mapped onto $HOME before comparing."""
    out = subprocess.run(
        ["ssh", "-G", "-F", str(config), target],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
        stdin=subprocess.DEVNULL,
        timeout=30,
    ).stdout
    pw_home = pwd.getpwuid(os.getuid()).pw_dir.rstrip("/") + "/"
    return [
        line.replace(pw_home, os.environ["HOME"] + "/")
        for line in out.splitlines()
        if line.split(" ", 1)[0] in KEYWORDS
    ]


@pytest.mark.parametrize(("name", "target"), [(n, t) for n, targets in CASES.items() for t in targets])
def test_resolution_matches_ssh_G(configs: Path, name: str, target: str) -> None:
    ours = resolve(target, config=load_config(configs / name)).dump()
    theirs = ssh_g(configs / name, target)
    by_key = lambda lines: {k: [x for x in lines if x.split(" ", 1)[0] == k] for k in KEYWORDS}  # noqa: E731
    assert by_key(ours) == by_key(theirs)  # identityfile lines compared in order


def test_the_cli_prints_it_and_reads_hosts_toml_names(configs: Path) -> None:
    result = gpudeck("hosts", "resolve", "-F", str(configs / "patterns.conf"), "Gpu1", cwd=configs)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        "hostname gpu1.internal",
        f"user {pwd.getpwuid(os.getuid()).pw_name}",
        "port 22",
    ]
    assert "hostkeyalias gpu-one" in result.stdout.splitlines()
    bad = gpudeck("hosts", "resolve", "-F", str(configs / "patterns.conf"), "host:port", cwd=configs)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_tokens_are_expanded_where_gpudeck_uses_them(configs: Path) -> None:
    config = load_config(configs / "patterns.conf")
    home, me = os.environ["HOME"], pwd.getpwuid(os.getuid()).pw_name
    gpu = resolve("Gpu1", config=config)
    assert gpu.identity_files == [f"{home}/.ssh/gpu_{me}_Gpu1_%", f"{home}/.ssh/last"]
    assert gpu.proxy_command == '/usr/bin/nc -X connect -x "proxy host:8080" gpu1.internal 22 # kept by ssh'
    assert gpu.known_hosts_name == "gpu-one" and gpu.server_alive_count_max == 0
    web = resolve("web1.example", config=config)
    assert web.identity_files[0] == f"{home}/.ssh/example_web1.example_2227_webuser"
    assert resolve("eq-host", config=config).user_known_hosts_files == [f"{home}/kh/one", "/abs/two"]


def test_an_ssh_url_proxyjump_hop_keeps_its_user_and_port(configs: Path) -> None:
    config = SshConfig.from_text("Host t\n  ProxyJump ssh://Ops@Bastion.Example:2222,second\n")
    hops = jump_chain(resolve("t", config=config), config)
    assert [(h.user, h.hostname, h.port) for h in hops] == [
        ("Ops", "bastion.example", 2222),
        (None, "second", 22),
    ]


def test_match_tagged_follows_openssh_9_4() -> None:
    # `Tag` and `Match tagged` came in OpenSSH 9.4 (this machine's ssh is older, so no ssh -G here):
    # the first Tag wins, and an untagged host matches only negated patterns.
    config = SshConfig.from_text(
        "Host t*\n  Tag gpu\nHost *\n  Tag later-loses\n"
        "Match tagged gpu,tpu\n  Port 2300\nMatch !tagged gpu\n  Port 2301\n"
    )
    assert resolve("t1", config=config).port == 2300
    assert resolve("x", config=config).port == 2301


def test_tilde_and_percent_d_are_the_passwd_home_whatever_HOME_says(
    configs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As under `sudo` or `HOME=… ssh`: ssh takes `~` and %d from the passwd entry, not from $HOME.
    monkeypatch.delenv("GPUDECK_SSH_HOME")
    config = configs / "tilde.conf"
    config.write_text(
        "Host *\n  IdentityFile ~/k1\n  IdentityFile %d/k2\n  IdentityFile /x/~/k3\n"
        "  UserKnownHostsFile ~/kh1 %d/kh2 ~//kh3\n"
    )
    theirs = subprocess.run(
        ["ssh", "-G", "-F", str(config), "h"],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
    ).stdout.splitlines()
    ours = gpudeck("hosts", "resolve", "-F", str(config), "h", cwd=configs)
    assert ours.returncode == 0, ours.stderr
    for key in ("userknownhostsfile", "identityfile"):
        assert [x for x in ours.stdout.splitlines() if x.startswith(key + " ")] == [
            x for x in theirs if x.startswith(key + " ")
        ]
    pw_home = pwd.getpwuid(os.getuid()).pw_dir
    assert os.environ["HOME"] != pw_home
    assert resolve("h", config=load_config(config)).identity_files == [
        f"{pw_home}/k1",
        f"{pw_home}/k2",
        "/x/~/k3",
    ]


@pytest.mark.slow
def test_a_suffix_that_resolves_canonicalizes_as_ssh_does(configs: Path) -> None:
    # Both run in a mount namespace whose /etc/hosts resolves gpu7.lab.example (the machine's stays).
    from tests.support.sshd import can_fake_login_shell

    if not can_fake_login_shell():
        pytest.skip("needs root and unshare -m for a private /etc/hosts")
    hosts = configs / "hosts"
    # glibc looks the anchored name (trailing dot) up as written: list both spellings
    hosts.write_text("127.0.0.1 localhost\n127.0.0.7 gpu7.lab.example gpu7.lab.example.\n")
    config = configs / "canonical_found.conf"

    def in_namespace(*argv: str) -> list[str]:
        out = subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts), *argv],
            capture_output=True,
            text=True,
            check=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
            cwd=configs,
        ).stdout
        return [line for line in out.splitlines() if line.split(" ", 1)[0] in KEYWORDS]

    for target in ("gpu7", "GPU7"):
        theirs = in_namespace("ssh", "-G", "-F", str(config), target)
        ours = in_namespace(sys.executable, "-m", "tui", "hosts", "resolve", "-F", str(config), target)
        assert "hostname gpu7.lab.example" in theirs and "port 2207" in theirs  # the case is real
        pw_home = pwd.getpwuid(os.getuid()).pw_dir.rstrip("/") + "/"
        theirs = [line.replace(pw_home, os.environ["HOME"] + "/") for line in theirs]
        assert sorted(ours) == sorted(theirs) and [x for x in ours if x.startswith("identityfile")] == [
            x for x in theirs if x.startswith("identityfile")
        ]


@pytest.mark.slow  # a CLI process beside ssh -G
def test_a_repeated_identity_or_certificate_file_is_listed_once_as_by_ssh_G(configs: Path) -> None:
    # readconf.c add_identity_file/add_certificate_file drop a path already listed as written; another
    # spelling of the same file stays.
    config = configs / "repeated.conf"
    config.write_text(
        "Host a\n  IdentityFile ~/.ssh/x\n  IdentityFile ~/.ssh/y\n  IdentityFile ~/.ssh/x\n"
        "  IdentityFile ~//.ssh/x\n  CertificateFile ~/c\n  CertificateFile ~/c\n"
        "Host *\n  IdentityFile ~/.ssh/y\n"
    )
    ours = gpudeck("hosts", "resolve", "-F", str(config), "a", cwd=configs)
    assert ours.returncode == 0, ours.stderr
    listed = [x for x in ours.stdout.splitlines() if x.startswith(("identityfile ", "certificatefile "))]
    assert listed == [x for x in ssh_g(config, "a") if x.startswith(("identityfile ", "certificatefile "))]
    assert listed.count("identityfile ~/.ssh/x") == 1
