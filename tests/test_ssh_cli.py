"""The CLI against a real OpenSSH server on 127.0.0.1: keys, deploy, run/ps/logs/metrics/stop/kill."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import JUNK, SshHome, keygen, serve_pids
from tests.support.waiting import wait_for
from tui.errors import EXIT_HOST, EXIT_HOSTKEY, EXIT_USAGE

LOSSES = """
import json, time
for step in range(1, 11):
    print(json.dumps({"step": step, "loss": round(1.0 / step, 4)}))
    time.sleep(0.01)
print("a;b $(id) `whoami` | & > <")
"""


@pytest.mark.slow
def test_unknown_key_is_refused_until_trusted_then_jobs_run_over_ssh(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    added = gpudeck("hosts", "add", "box", "box", "--agent-dir", str(ssh_home.agent_dir), cwd=tmp_path)
    assert added.returncode == EXIT_HOSTKEY  # stdin is not a TTY: no prompt, one line, its own code
    line = added.stderr.strip()
    assert len(line.splitlines()) == 1 and "with --yes" in line and "SHA256:" in line and "not added" in line
    stored = gpudeck(
        "hosts", "add", "box", "box", "--agent-dir", str(ssh_home.agent_dir), "--no-connect", cwd=tmp_path
    )
    assert stored.returncode == 0 and "gpudeck hosts trust box" in stored.stdout  # stored, said untrusted
    for argv in (("ps",), ("run", "--host", "box", "--", "true")):
        refused = gpudeck(*argv, cwd=tmp_path)
        assert refused.returncode == EXIT_HOSTKEY, refused.stderr
        assert "gpudeck hosts trust box" in refused.stderr
    assert not ssh_home.agent_dir.exists()  # nothing was deployed to an unverified host

    trusted = gpudeck("hosts", "trust", "box", "--yes", cwd=tmp_path)
    assert trusted.returncode == 0 and "SHA256:" in trusted.stdout
    assert gpudeck("hosts", "trust", "box", cwd=tmp_path).stdout.strip() == "box: host key already trusted"

    job_id = gpudeck(
        "run", "--host", "box", "--name", "ssh-demo", "--", sys.executable, "-c", LOSSES, cwd=tmp_path
    ).stdout.strip()
    assert len(job_id) == 22
    follow = gpudeck("logs", "-f", "ssh-demo", cwd=tmp_path)
    assert follow.returncode == 0, follow.stderr
    out_log = next(ssh_home.agent_dir.glob(f"jobs/{job_id}/0/output.log")).read_bytes()
    assert follow.stdout.encode() == out_log
    assert follow.stdout.splitlines()[-1] == "a;b $(id) `whoami` | & > <"  # literal, never a shell's
    points = [json.loads(x) for x in gpudeck("metrics", "--json", job_id, cwd=tmp_path).stdout.splitlines()]
    assert [p["values"]["step"] for p in points] == list(range(1, 11))
    jobs = json.loads(gpudeck("ps", "--json", "--all", cwd=tmp_path).stdout)
    assert [(j["id"], j["state"], j["nodes"][0]["host"]) for j in jobs] == [(job_id, "exited", "box")]

    sleeper = gpudeck("run", "--host", "box", "--", "sleep", "300", cwd=tmp_path).stdout.strip()
    stopped = gpudeck("stop", "--grace", "2", sleeper, cwd=tmp_path)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    victim = gpudeck("run", "--host", "box", "--", "sleep", "300", cwd=tmp_path).stdout.strip()
    assert "killed" in gpudeck("kill", victim, cwd=tmp_path).stdout
    hosts = json.loads(gpudeck("hosts", "--json", cwd=tmp_path).stdout)
    box = next(h for h in hosts if h["name"] == "box")
    assert box["reachable"] and box["agent_version"] and abs(box["clock_offset_s"]) < 1.0
    wait_for(lambda: not serve_pids(ssh_home.agent_dir), timeout=10, what="every serve to exit with its CLI")


@pytest.mark.slow
def test_a_changed_key_is_refused_with_an_attack_warning_even_after_trust(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    other = keygen(tmp_path / "impostor").with_suffix(".pub").read_text().split()
    (ssh_home.gpudeck_home / "known_hosts").write_text(
        f"[127.0.0.1]:{ssh_home.server.port} {other[0]} {other[1]}\n"
    )
    ssh_home.add_host()
    for argv in (("hosts", "trust", "box", "--yes"), ("run", "--host", "box", "--", "true"), ("ps",)):
        result = gpudeck(*argv, cwd=tmp_path)
        assert result.returncode == EXIT_HOSTKEY, (argv, result.stderr)
        assert "HAS CHANGED" in result.stderr and "man-in-the-middle" in result.stderr
    assert not ssh_home.agent_dir.exists()


@pytest.mark.slow
def test_no_usable_python_is_named(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    missing = gpudeck(
        "hosts",
        "add",
        "nopy",
        "box",
        "--python",
        "/nonexistent/python3",
        "--agent-dir",
        str(ssh_home.agent_dir),
        cwd=tmp_path,
    )
    assert missing.returncode == EXIT_HOST
    assert (
        "no /nonexistent/python3 on this host (found:" in missing.stderr
        and "/python3" in missing.stderr.split("found:")[1]
    )
    old = tmp_path / "python3.6"
    old.write_text("#!/bin/sh\necho 3 6 9\n")  # answers the version probe like an old interpreter
    old.chmod(0o755)
    ssh_home.add_host("oldpy", python=str(old))
    result = gpudeck("run", "--host", "oldpy", "--", "true", cwd=tmp_path)
    assert (
        result.returncode == EXIT_HOST and f"{old} is Python 3.6.9; the agent needs >= 3.8" in result.stderr
    )


@pytest.mark.slow
def test_shell_metacharacters_stay_literal(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    weird_dir = tmp_path / "agent dir; touch PWNED $(touch PWNED2)"
    ssh_home.add_host(agent_dir=str(weird_dir))
    bad_name = gpudeck("run", "--host", "box", "--name", "x; touch PWNED", "--", "true", cwd=tmp_path)
    assert bad_name.returncode == EXIT_USAGE
    argv = ["printf", "%s\\n", "$(touch PWNED3)", "; touch PWNED4", "`touch PWNED5`", "'\"", "*"]
    job_id = gpudeck("run", "--host", "box", "--", *argv, cwd=tmp_path).stdout.strip()
    follow = gpudeck("logs", "-f", job_id, cwd=tmp_path)
    assert follow.returncode == 0, follow.stderr
    assert follow.stdout.splitlines()[-5:] == [
        "$(touch PWNED3)",
        "; touch PWNED4",
        "`touch PWNED5`",
        "'\"",
        "*",
    ]
    assert (weird_dir / "agents").is_dir()
    home = ssh_home.server.remote_home
    assert not [p for d in (tmp_path, home, Path("/")) for p in d.glob("PWNED*")]


@pytest.mark.slow
def test_bashrc_junk_is_skipped_and_hosts_lists_every_host(ssh_home: SshHome, tmp_path: Path) -> None:
    assert JUNK in (ssh_home.server.remote_home / ".bashrc").read_text()  # every test here runs past it
    ssh_home.trust()
    ssh_home.add_host()
    ssh_home.add_host("down", target=f"root@127.0.0.1:{_closed_port()}")
    result = gpudeck("hosts", cwd=tmp_path)
    assert result.returncode == 0
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert set(rows) == {"local", "box", "down"}
    assert " ok " in rows["box"] and "unreachable" in rows["down"]
    ps = gpudeck("ps", cwd=tmp_path)  # one host down does not hide the others, but the list is partial
    assert ps.returncode == 4 and "skipping a host: host down unreachable" in ps.stderr


def _closed_port() -> int:
    from tests.support.sshd import free_port

    return free_port()
